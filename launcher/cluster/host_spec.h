// The hosts of an ssh launch: `--hosts h1,h2:4` or `--hostfile FILE`.
//  --hosts: comma-separated HOST or HOST:SLOTS; an IPv6 address goes in brackets
//    ("[fd00::2]:4").
//  hostfile: one host per line, `HOST [slots=N]`; '#' starts a comment; blank lines are
//    skipped.
// SLOTS is the number of workers on that host (1..65536); unset means --nproc-per-node.
// A host name is letters, digits, '.', '-' and '_' and does not start with '-' (so it can
// never turn into an ssh option). A host named twice (also "node1" and "node1.example.org",
// host_match.h) is an error, as is an empty list. Errors name the item, or the file and line.
// Pure; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::launcher::cluster {

struct HostSlots {
  std::string host;          // as written, without IPv6 brackets
  std::optional<int> slots;  // workers on the host; unset = --nproc-per-node
};

Result<std::vector<HostSlots>> parse_hosts_option(std::string_view text);

// `path` names the file in messages.
Result<std::vector<HostSlots>> parse_hostfile(std::string_view text, std::string_view path);

// Checks one host name (see above); `where` prefixes the message.
Status check_host_name(std::string_view host, std::string_view where);

}  // namespace ddp::launcher::cluster
