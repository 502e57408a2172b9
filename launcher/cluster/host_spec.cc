#include "launcher/cluster/host_spec.h"

#include <cctype>
#include <charconv>

#include "common/host_port.h"
#include "launcher/cluster/host_match.h"

namespace ddp::launcher::cluster {
namespace {

constexpr int kMaxSlots = 65536;

bool parse_slots(std::string_view text, int& out) {
  if (text.empty() || text.size() > 6) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  std::from_chars(text.data(), text.data() + text.size(), out);
  return out >= 1 && out <= kMaxSlots;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
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
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    std::string_view item = text.substr(start, comma - start);
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
      int n = 0;
      if (!parse_slots(slots, n)) {
        return invalid_argument(where + "'" + std::string(item) + "': slots must be a number " +
                                "from 1 to " + std::to_string(kMaxSlots) + ", as in " +
                                std::string(host) + ":4");
      }
      entry.slots = n;
    }
    entry.host = std::string(host);
    if (Status s = check_unique(hosts, entry.host, where); !s) return s;
    hosts.push_back(std::move(entry));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
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
      int n = 0;
      if (word.rfind("slots=", 0) != 0 || entry.slots || !parse_slots(word.substr(6), n)) {
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
