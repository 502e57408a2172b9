#include "proc/open_file_limit.h"

#include <atomic>

namespace ddp::proc {
namespace {
std::atomic<rlim_t> children_limit{0};
}  // namespace

rlim_t raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur >= limit.rlim_max) return limit.rlim_cur;
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return before;
  children_limit.store(before);
  return limit.rlim_cur;
}

rlim_t children_open_file_limit() { return children_limit.load(); }

}  // namespace ddp::proc
