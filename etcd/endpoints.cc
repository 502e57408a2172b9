#include "etcd/endpoints.h"

#include "common/host_port.h"
#include "common/text.h"

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
  auto parsed = parse_host_port(text);
  if (!parsed) {
    return invalid_argument("--rdzv-endpoint " + original + ": " + parsed.status().message() +
                            " (HOST[:PORT], default 2379)");
  }
  Endpoint e;
  e.host = std::move(parsed->host);
  e.port = parsed->port.value_or(kDefaultPort);
  return e;
}

}  // namespace

std::string Endpoint::to_string() const { return join_host_port(host, port); }

Result<std::vector<Endpoint>> parse_endpoints(std::string_view text) {
  std::vector<Endpoint> out;
  if (text.empty()) {
    return invalid_argument(
        "--rdzv-backend etcd needs --rdzv-endpoint HOST[:PORT][,HOST[:PORT]...]");
  }
  for (std::string_view piece : split(text, ',')) {
    const std::string_view one = trim(piece, " ");
    if (one.empty()) {
      return invalid_argument("--rdzv-endpoint " + std::string(text) +
                              ": an empty entry; separate etcd endpoints with single commas");
    }
    auto e = parse_one(one);
    if (!e) return e.status();
    out.push_back(std::move(e).value());
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
