#include "rendezvous/etcd_hub/etcd_keys.h"

#include <cstdio>

namespace ddp::rendezvous {

std::string EtcdKeys::request(const std::string& node_key, std::uint64_t seq) const {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(seq));
  return requests() + node_key + "/" + digits;
}

std::optional<std::string> EtcdKeys::node_of(std::string_view key) const {
  const std::string p = nodes();
  if (key.size() <= p.size() || key.substr(0, p.size()) != p) return std::nullopt;
  return std::string(key.substr(p.size()));
}

std::optional<std::string> EtcdKeys::requester_of(std::string_view key) const {
  const std::string p = requests();
  if (key.size() <= p.size() || key.substr(0, p.size()) != p) return std::nullopt;
  key.remove_prefix(p.size());
  auto slash = key.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  return std::string(key.substr(0, slash));
}

}  // namespace ddp::rendezvous
