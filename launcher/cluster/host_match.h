// Whether two spellings name the same machine, without DNS: schedulers and users mix short
// names ("node1") and fully qualified ones ("node1.cluster.example"). Pure; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ddp::launcher::cluster {

// Case-insensitive; equal names match, and a name without a dot matches a qualified name
// whose first label it is ("node1" ~ "node1.cluster.example"). Two different qualified names
// never match ("node1.a" vs "node1.b"), and IP addresses match only themselves.
bool same_host(std::string_view a, std::string_view b);

// True for names that always mean the machine asking: localhost, localhost.localdomain,
// 127.x.x.x and ::1.
bool is_loopback_name(std::string_view host);

// The positions in `hosts` that `self` names (same_host), in order.
std::vector<std::size_t> positions_of(const std::vector<std::string>& hosts, std::string_view self);

}  // namespace ddp::launcher::cluster
