#include "rendezvous/refusal_log.h"

namespace ddp::rendezvous {

std::optional<std::uint64_t> RefusalLog::record(const std::string& key, TimePoint now) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= max_keys_) make_room(now);
    entries_.emplace(key, Entry{now, 0});
    return 1;
  }
  Entry& entry = it->second;
  if (now - entry.last_line < interval_) {
    ++entry.suppressed;
    return std::nullopt;
  }
  const std::uint64_t count = entry.suppressed + 1;
  entry = Entry{now, 0};
  return count;
}

void RefusalLog::make_room(TimePoint now) {
  std::erase_if(entries_, [&](const auto& kv) { return now - kv.second.last_line >= interval_; });
  if (entries_.size() >= max_keys_) entries_.clear();
}

}  // namespace ddp::rendezvous
