#include "etcd/endpoints.h"

#include <charconv>

namespace ddp::etcd {
namespace {

Result<Endpoint> parse_one(std::string_view text) {
  const std::string original(text);
  for (std::string_view scheme : {"http://", "https://"}) {
    if (text.substr(0, scheme.size()) == scheme) text.remove_prefix(scheme.size());
  }
  if (text.find("://") != std::string_view::npos) {
    return invalid_argument("--rdzv-endpoint " + original +
                            ": only http:// or https:// (or no scheme) is understood");
  }
  while (!text.empty() && text.back() == '/') text.remove_suffix(1);
  Endpoint e;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos)
      return invalid_argument("--rdzv-endpoint " + original + ": no ']'");
    e.host = std::string(text.substr(1, close - 1));
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':')
        return invalid_argument("--rdzv-endpoint " + original + ": junk after ']'");
      port_text = text.substr(close + 2);
    }
  } else if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
    e.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  } else {
    e.host = std::string(text);
  }
  if (e.host.empty()) return invalid_argument("--rdzv-endpoint '" + original + "' has no host");
  if (!port_text.empty() || text.back() == ':') {
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return invalid_argument("--rdzv-endpoint " + original +
                              ": the port must be 1 to 65535 (HOST[:PORT], default 2379)");
    }
    e.port = static_cast<std::uint16_t>(port);
  }
  return e;
}

}  // namespace

std::string Endpoint::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<std::vector<Endpoint>> parse_endpoints(std::string_view text) {
  std::vector<Endpoint> out;
  if (text.empty()) {
    return invalid_argument(
        "--rdzv-backend etcd needs --rdzv-endpoint HOST[:PORT][,HOST[:PORT]...]");
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    std::string_view one =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (one.empty()) {
      return invalid_argument("--rdzv-endpoint " + std::string(text) +
                              ": an empty entry; separate etcd endpoints with single commas");
    }
    auto e = parse_one(one);
    if (!e) return e.status();
    out.push_back(std::move(e).value());
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string join_endpoints(const std::vector<Endpoint>& endpoints) {
  std::string out;
  for (const auto& e : endpoints) {
    if (!out.empty()) out += ", ";
    out += e.to_string();
  }
  return out;
}

}  // namespace ddp::etcd
