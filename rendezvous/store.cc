#include "rendezvous/store.h"

#include <algorithm>
#include <utility>

#include "common/text.h"

namespace ddp::rendezvous {
namespace {

template <typename T>
void erase_one(std::vector<T>& v, const T& item) {
  auto it = std::find(v.begin(), v.end(), item);
  if (it != v.end()) v.erase(it);
}

std::string printable(std::string_view bytes) {
  std::string out;
  for (char c : bytes.substr(0, 40)) out.push_back(c >= 32 && c < 127 ? c : '?');
  if (bytes.size() > 40) out += "...";
  return out;
}

}  // namespace

bool Store::exists(const std::string& key) const {
  if (values_.count(key) != 0) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

void Store::write(const std::string& key, std::string value) {
  keep(key, std::move(value));
  wake(key);
}

void Store::keep(const std::string& key, std::string value) {
  auto [it, created] = values_.try_emplace(key);
  data_bytes_ += value.size() + (created ? key.size() : 0);
  data_bytes_ -= it->second.size();
  if (watchers_.count(key) != 0) {
    std::string old = std::move(it->second);
    it->second = std::move(value);
    notify(created ? WatchEvent::kCreated : WatchEvent::kUpdated, key, old, it->second);
  } else {
    it->second = std::move(value);
  }
}

void Store::set(const std::string& key, std::string value) { write(key, std::move(value)); }

std::string Store::compare_set(const std::string& key, const std::string& expected,
                               std::string desired) {
  auto it = values_.find(key);
  if (it == values_.end()) {
    if (!expected.empty()) return expected;  // nothing stored, nothing to wake
    write(key, desired);
    return desired;
  }
  // A mismatch writes nothing and so wakes nobody (PyTorch's servers do the same).
  if (it->second == expected) write(key, std::move(desired));
  return values_.at(key);
}

std::string Store::get(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? std::string() : it->second;
}

Result<std::int64_t> Store::add(const std::string& key, std::int64_t delta) {
  auto total = sum(key, delta);
  if (total) write(key, std::to_string(*total));
  return total;
}

Result<bool> Store::barrier(Subscriber& who, const std::string& key, std::int64_t world_size) {
  auto count = sum(key, 1);
  if (!count) return count.status();
  keep(key, std::to_string(*count));  // an arrival short of world_size wakes nobody
  if (*count >= world_size) {
    wake(key);
    return true;
  }
  park(who, {key});
  return false;
}

Result<std::int64_t> Store::sum(const std::string& key, std::int64_t delta) const {
  std::int64_t total = delta;
  auto it = values_.find(key);
  if (it != values_.end()) {
    const std::string& text = it->second;
    const auto current = parse_number<std::int64_t>(text);
    if (!current) {
      return invalid_argument("ADD or BARRIER on key '" + printable(key) + "' whose value '" +
                              printable(text) + "' is not a decimal integer");
    }
    if (__builtin_add_overflow(*current, delta, &total)) {
      return invalid_argument("ADD or BARRIER on key '" + printable(key) +
                              "' overflows a 64-bit integer");
    }
  }
  return total;
}

void Store::append(const std::string& key, std::string_view value) {
  auto it = values_.find(key);
  std::string joined = it == values_.end() ? std::string() : it->second;
  joined.append(value);
  write(key, std::move(joined));
}

std::int64_t Store::delete_key(const std::string& key) {
  auto it = values_.find(key);
  if (it == values_.end()) return 0;
  std::string old = std::move(it->second);
  data_bytes_ -= key.size() + old.size();
  values_.erase(it);
  notify(WatchEvent::kDeleted, key, old, {});
  return 1;
}

std::vector<std::string> Store::list_keys() const {
  std::vector<std::string> keys;
  keys.reserve(values_.size());
  for (const auto& [k, v] : values_) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  return keys;
}

bool Store::check(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(), [this](const auto& k) { return exists(k); });
}

bool Store::wait(Subscriber& who, const std::vector<std::string>& keys) {
  Waiter waiter{&who, {}};
  for (const auto& k : keys) {
    if (!exists(k) &&
        std::find(waiter.missing.begin(), waiter.missing.end(), k) == waiter.missing.end()) {
      waiter.missing.push_back(k);
    }
  }
  if (waiter.missing.empty()) return true;
  park(who, std::move(waiter.missing));
  return false;
}

void Store::park(Subscriber& who, std::vector<std::string> keys) {
  const WaiterId id = next_waiter_++;
  for (const auto& k : keys) waiting_on_[k].push_back(id);
  registrations_[&who].waits.push_back(id);
  waiters_.emplace(id, Waiter{&who, std::move(keys)});
}

void Store::forget_waiter(WaiterId id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  for (const auto& k : it->second.missing) {
    auto list = waiting_on_.find(k);
    if (list == waiting_on_.end()) continue;
    erase_one(list->second, id);
    if (list->second.empty()) waiting_on_.erase(list);
  }
  auto reg = registrations_.find(it->second.owner);
  if (reg != registrations_.end()) {
    erase_one(reg->second.waits, id);
    if (reg->second.waits.empty() && reg->second.watched.empty()) registrations_.erase(reg);
  }
  waiters_.erase(it);
}

void Store::wake(const std::string& key, bool at_most_one) {
  auto list = waiting_on_.find(key);
  if (list == waiting_on_.end()) return;
  std::vector<WaiterId> touched;
  if (at_most_one) {
    touched.push_back(list->second.front());
    list->second.erase(list->second.begin());
    if (list->second.empty()) waiting_on_.erase(list);
  } else {
    touched = std::move(list->second);
    waiting_on_.erase(list);
  }
  for (WaiterId id : touched) {
    auto it = waiters_.find(id);
    if (it == waiters_.end()) continue;
    erase_one(it->second.missing, key);
    if (!it->second.missing.empty()) continue;
    Subscriber* owner = it->second.owner;
    forget_waiter(id);
    owner->wait_satisfied();
  }
}

std::size_t Store::cancel_waits(Subscriber& who) {
  auto reg = registrations_.find(&who);
  if (reg == registrations_.end()) return 0;
  const std::vector<WaiterId> ids = reg->second.waits;
  for (WaiterId id : ids) forget_waiter(id);
  return ids.size();
}

void Store::watch(Subscriber& who, const std::string& key) {
  watchers_[key].push_back(&who);
  registrations_[&who].watched.push_back(key);
}

void Store::clear() {
  values_.clear();
  queues_.clear();
  waiters_.clear();
  waiting_on_.clear();
  watchers_.clear();
  registrations_.clear();
  data_bytes_ = 0;
}

void Store::drop(Subscriber& who) {
  cancel_waits(who);
  auto reg = registrations_.find(&who);
  if (reg == registrations_.end()) return;
  for (const auto& key : reg->second.watched) {
    auto list = watchers_.find(key);
    if (list == watchers_.end()) continue;
    std::erase(list->second, &who);
    if (list->second.empty()) watchers_.erase(list);
  }
  registrations_.erase(reg);
}

void Store::notify(WatchEvent event, const std::string& key, std::string_view old_value,
                   std::string_view new_value) {
  auto list = watchers_.find(key);
  if (list == watchers_.end()) return;
  // A callback may close its connection, which drops it from this list: iterate a copy.
  const std::vector<Subscriber*> watchers = list->second;
  for (Subscriber* s : watchers) s->key_changed(event, key, old_value, new_value);
}

void Store::queue_push(const std::string& key, std::string value) {
  auto [queue, created] = queues_.try_emplace(key);
  data_bytes_ += value.size() + (created ? key.size() : 0);
  queue->second.push_back(std::move(value));
  wake(key, /*at_most_one=*/true);
}

QueuePopResult Store::queue_pop(const std::string& key) {
  QueuePopResult result;
  auto it = queues_.find(key);
  if (it == queues_.end()) return result;
  result.length_before = static_cast<std::int64_t>(it->second.size());
  if (!it->second.empty()) {
    result.value = std::move(it->second.front());
    data_bytes_ -= result.value->size();
    it->second.pop_front();
  }
  if (it->second.empty()) {
    data_bytes_ -= key.size();
    queues_.erase(it);
  }
  return result;
}

std::int64_t Store::queue_len(const std::string& key) const {
  auto it = queues_.find(key);
  return it == queues_.end() ? 0 : static_cast<std::int64_t>(it->second.size());
}

}  // namespace ddp::rendezvous
