#include "rendezvous/status/process_stats.h"

#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace ddp::rendezvous::status {
namespace {

std::string read_all(const char* path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The n-th (0-based) space-separated field of `text`, or empty.
std::string_view field(std::string_view text, int n) {
  std::size_t pos = 0;
  for (int i = 0; i < n; ++i) {
    pos = text.find(' ', pos);
    if (pos == std::string_view::npos) return {};
    ++pos;
  }
  const std::size_t end = text.find_first_of(" \n", pos);
  return text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
}

std::uint64_t to_u64(std::string_view s) {
  std::uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

double parse_cpu_seconds(std::string_view stat_text, long ticks_per_second) {
  // The command name (field 2) is in parentheses and may hold spaces: count fields after the
  // last ')'. There, field 3 (state) is index 0, so utime (14) is 11 and stime (15) is 12.
  const std::size_t close = stat_text.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return 0;
  std::string_view rest = stat_text.substr(close + 1);
  if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const std::uint64_t ticks = to_u64(field(rest, 11)) + to_u64(field(rest, 12));
  return static_cast<double>(ticks) / static_cast<double>(ticks_per_second);
}

std::uint64_t parse_rss_bytes(std::string_view statm_text, long page_bytes) {
  if (page_bytes <= 0) return 0;
  return to_u64(field(statm_text, 1)) * static_cast<std::uint64_t>(page_bytes);
}

ProcessStats read_process_stats() {
  ProcessStats p;
  p.cpu_seconds = parse_cpu_seconds(read_all("/proc/self/stat"), sysconf(_SC_CLK_TCK));
  p.rss_bytes = parse_rss_bytes(read_all("/proc/self/statm"), sysconf(_SC_PAGESIZE));
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++p.open_fds;
  }
  return p;
}

}  // namespace ddp::rendezvous::status
