#include "launcher/cluster/host_spec.h"

#include <cctype>

#include "common/host_port.h"
#include "common/text.h"
#include "launcher/cluster/host_match.h"

namespace ddp::launcher::cluster {
namespace {

constexpr int kMaxSlots = 65536;

// 1 to kMaxSlots, in at most 6 digits.
std::optional<int> parse_slots(std::string_view text) {
  const auto n = text.size() <= 6 ? parse_number<int>(text) : std::nullopt;
  if (!n || *n < 1 || *n > kMaxSlots) return std::nullopt;
  return n;
}

Status check_unique(const std::vector<HostSlots>& hosts, const std::string& host,
                    const std::string& where) {
  for (const HostSlots& known : hosts) {
    if (same_host(known.host, host)) {
      return invalid_argument(where + "host '" + host + "' is listed twice (also as '" +
                              known.host + "'); name every host once and give its slots");
    }
  }
  return Status::ok();
}

}  // namespace

Status check_host_name(std::string_view host, std::string_view where) {
  auto bad = [&](const std::string& why) {
    return invalid_argument(std::string(where) + "'" + std::string(host) +
                            "' is not a host name: " + why);
  };
  if (host.empty()) return bad("it is empty");
  if (host.front() == '-') return bad("it starts with '-'");
  bool ipv6 = host.find(':') != std::string_view::npos;
  for (char c : host) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
              (ipv6 && c == ':');
    if (!ok) {
      return bad(std::string("'") + c +
                 "' is not allowed (use letters, digits, '.', '-', '_'; put a user in "
                 "--ssh-user)");
    }
  }
  if (host.size() > 253) return bad("it is longer than 253 characters");
  return Status::ok();
}

Result<std::vector<HostSlots>> parse_hosts_option(std::string_view text) {
  std::vector<HostSlots> hosts;
  for (std::string_view item : split(text, ',')) {
    std::string where = "--hosts " + std::string(text) + ": ";
    HostSlots entry;
    auto parts = split_host_port(item);  // HOST[:SLOTS], [IPv6][:SLOTS]
    if (!parts) {
      return invalid_argument(where + "'" + std::string(item) + "': " + parts.status().message() +
                              "; write HOST, HOST:SLOTS or [IPv6]:SLOTS, as in [fd00::2]:4");
    }
    std::string_view host = parts->host;
    const bool has_slots = parts->port.has_value();
    std::string_view slots = parts->port.value_or("");
    if (Status s = check_host_name(host, where); !s) return s;
    if (has_slots) {
      entry.slots = parse_slots(slots);
      if (!entry.slots) {
        return invalid_argument(where + "'" + std::string(item) + "': slots must be a number " +
                                "from 1 to " + std::to_string(kMaxSlots) + ", as in " +
                                std::string(host) + ":4");
      }
    }
    entry.host = std::string(host);
    if (Status s = check_unique(hosts, entry.host, where); !s) return s;
    hosts.push_back(std::move(entry));
  }
  return hosts;
}

Result<std::vector<HostSlots>> parse_hostfile(std::string_view text, std::string_view path) {
  std::vector<HostSlots> hosts;
  int line_number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    std::string_view line = text.substr(start, end - start);
    start = end == std::string_view::npos ? text.size() : end + 1;
    ++line_number;
    std::string where = std::string(path) + ":" + std::to_string(line_number) + ": ";
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    std::vector<std::string_view> words;
    while (!line.empty()) {
      std::size_t i = 0;
      while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      words.push_back(line.substr(0, i));
      line = trim(line.substr(i));
    }
    HostSlots entry;
    std::string_view host = words[0];
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    if (Status s = check_host_name(host, where); !s) return s;
    entry.host = std::string(host);
    for (std::size_t w = 1; w < words.size(); ++w) {
      std::string_view word = words[w];
      const auto n = word.rfind("slots=", 0) == 0 ? parse_slots(word.substr(6)) : std::nullopt;
      if (!n || entry.slots) {
        return invalid_argument(where + "'" + std::string(word) +
                                "' is not understood; a line is `HOST` or `HOST slots=N` with N "
                                "from 1 to " +
                                std::to_string(kMaxSlots));
      }
      entry.slots = n;
    }
    if (Status s = check_unique(hosts, entry.host, where); !s) return s;
    hosts.push_back(std::move(entry));
  }
  if (hosts.empty()) {
    return invalid_argument(std::string(path) +
                            " lists no hosts; write one `HOST slots=N` line "
                            "per node");
  }
  return hosts;
}

}  // namespace ddp::launcher::cluster
