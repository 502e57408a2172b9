#include "common/host_port.h"

#include "common/text.h"

namespace ddp {

Result<HostPortText> split_host_port(std::string_view text, BareIpv6 bare) {
  HostPortText out;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return invalid_argument("no closing ']'");
    out.host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return invalid_argument("expected ':PORT' after ']'");
      out.port = rest.substr(1);
    }
  } else if (auto colon = text.find(':'); colon == std::string_view::npos) {
    out.host = text;
  } else if (text.find(':', colon + 1) == std::string_view::npos) {
    out.host = text.substr(0, colon);
    out.port = text.substr(colon + 1);
  } else if (bare == BareIpv6::kHost) {
    out.host = text;
  } else {
    return invalid_argument("an IPv6 address goes in brackets, as in [fd00::2]:29400");
  }
  return out;
}

Result<std::uint16_t> parse_port(std::string_view text, std::uint16_t min_port) {
  const auto port = parse_number<unsigned>(text);
  if (!port || *port < min_port || *port > 65535) {
    return invalid_argument("the port must be " + std::to_string(min_port) + " to 65535");
  }
  return static_cast<std::uint16_t>(*port);
}

Result<HostPort> parse_host_port(std::string_view text, BareIpv6 bare, std::uint16_t min_port) {
  auto parts = split_host_port(text, bare);
  if (!parts) return parts.status();
  if (parts->host.empty()) return invalid_argument("no host");
  HostPort out{std::string(parts->host), std::nullopt};
  if (parts->port) {
    auto port = parse_port(*parts->port, min_port);
    if (!port) return port.status();
    out.port = *port;
  }
  return out;
}

std::string join_host_port(std::string_view host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  std::string out;  // appended piece by piece: "[" + string trips GCC 12's -Wrestrict (bug 105329)
  if (v6) out += '[';
  out += host;
  if (v6) out += ']';
  out += ':';
  out += std::to_string(port);
  return out;
}

}  // namespace ddp
