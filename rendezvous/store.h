// The state of one TCPStore: keys and values, queues, parked WAITs and 1.13 key watches.
// No I/O and no clock: the session calls in with decoded requests and the store calls the
// session back (through Subscriber) when a parked wait is satisfied or a watched key changes.
//
// Semantics follow PyTorch's servers (1.13 legacy and the libuv server of >= 2.4); where the
// legacy server is buggy we behave like libuv:
//  - every write (SET, COMPARE_SET, ADD, APPEND, MULTI_SET) wakes the waiters of its key;
//    a BARRIER arrival wakes them only when it completes the barrier;
//  - GET of a missing key returns an empty value;
//  - ADD stores ASCII decimal; ADD on a value that is not a decimal integer (or overflows)
//    is an error, which closes the requesting connection.
//
// Threading: single-threaded (the io_context's thread); no locks. Subscriber callbacks are
// invoked synchronously from inside the store call that caused them; a callback must not
// call back into the store (the session only queues bytes).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "rendezvous/protocol.h"

namespace ddp::rendezvous {

// One connection as the store sees it. The store keeps raw pointers to subscribers with
// parked waits or watches; the owner must call Store::drop() before destroying one.
class Subscriber {
 public:
  virtual ~Subscriber() = default;
  // A parked WAIT of this subscriber is complete (send STOP_WAITING).
  virtual void wait_satisfied() = 0;
  // A key this subscriber watches changed (send the 1.13 watch push).
  virtual void key_changed(WatchEvent event, std::string_view key, std::string_view old_value,
                           std::string_view new_value) = 0;
};

struct QueuePopResult {
  std::int64_t length_before = 0;
  std::optional<std::string> value;  // set when length_before > 0
};

class Store {
 public:
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  void set(const std::string& key, std::string value);
  // Missing key: empty `expected` stores `desired` and returns it; otherwise nothing is
  // stored and `expected` is returned. Present key: stores `desired` when the value equals
  // `expected`; returns the value now stored. A write wakes the key's waiters.
  std::string compare_set(const std::string& key, const std::string& expected, std::string desired);
  // The value, or empty for a missing key.
  std::string get(const std::string& key) const;
  // kInvalidArgument when the stored value is not a decimal integer or the sum overflows.
  Result<std::int64_t> add(const std::string& key, std::int64_t delta);
  // BARRIER (PyTorch >= 2.14): counts one arrival at `key` (ASCII decimal, as ADD; the same
  // error) and returns true once the count reaches `world_size`, waking every waiter of `key`.
  // Before that it returns false and parks `who` on `key` as a WAIT: satisfied by the last
  // arrival or by any other write to `key` (PyTorch's server does the same); CANCEL_WAIT drops
  // it. An arrival short of `world_size` wakes nobody.
  Result<bool> barrier(Subscriber& who, const std::string& key, std::int64_t world_size);
  void append(const std::string& key, std::string_view value);
  // Returns 1 when the key existed (and is now gone), else 0. Does not wake waiters.
  std::int64_t delete_key(const std::string& key);
  std::int64_t num_keys() const { return static_cast<std::int64_t>(values_.size()); }
  std::vector<std::string> list_keys() const;
  // True when every key exists (as a value or a non-empty queue).
  bool check(const std::vector<std::string>& keys) const;

  // Returns true when all keys exist now; otherwise parks a waiter for `who` that is
  // satisfied (wait_satisfied()) by the write that creates the last missing key.
  // A subscriber may have several parked waits.
  bool wait(Subscriber& who, const std::vector<std::string>& keys);
  // Drops every parked wait of `who` (CANCEL_WAIT). Returns how many were dropped.
  std::size_t cancel_waits(Subscriber& who);
  // Registers a 1.13 watch: every later change of `key` calls who.key_changed().
  void watch(Subscriber& who, const std::string& key);
  // Forgets `who` entirely (connection closed): waits and watches.
  void drop(Subscriber& who);
  // Forgets everything: keys, queues, and every parked wait and watch (their subscribers are
  // never called again for them). The store of a new attempt (Server::reset_store).
  void clear();

  void queue_push(const std::string& key, std::string value);
  QueuePopResult queue_pop(const std::string& key);
  std::int64_t queue_len(const std::string& key) const;

  // Introspection for tests, logs and the status endpoint. O(1).
  std::size_t parked_waits() const { return waiters_.size(); }
  std::size_t queue_count() const { return queues_.size(); }
  // Bytes of every key and value held, queued values included.
  std::uint64_t data_bytes() const { return data_bytes_; }

 private:
  using WaiterId = std::uint64_t;
  struct Waiter {
    Subscriber* owner = nullptr;
    std::vector<std::string> missing;  // keys not yet written
  };
  struct Registrations {
    std::vector<WaiterId> waits;
    std::vector<std::string> watched;
  };

  bool exists(const std::string& key) const;
  // The value of `key` plus delta, as ADD checks it; stores nothing.
  Result<std::int64_t> sum(const std::string& key, std::int64_t delta) const;
  // Stores and notifies watchers; wakes no waiter (write() = keep() + wake()).
  void keep(const std::string& key, std::string value);
  // Parks a waiter of `who` on `keys`, each woken by the next write of that key.
  void park(Subscriber& who, std::vector<std::string> keys);
  // A write made `key` exist: decrement its waiters, satisfy the complete ones.
  // `at_most_one` (QUEUE_PUSH) stops after the first waiter that the write touches.
  void wake(const std::string& key, bool at_most_one = false);
  void notify(WatchEvent event, const std::string& key, std::string_view old_value,
              std::string_view new_value);
  void write(const std::string& key, std::string value);
  void forget_waiter(WaiterId id);

  std::uint64_t data_bytes_ = 0;
  std::unordered_map<std::string, std::string> values_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  WaiterId next_waiter_ = 1;
  std::unordered_map<WaiterId, Waiter> waiters_;
  std::unordered_map<std::string, std::vector<WaiterId>> waiting_on_;
  std::unordered_map<std::string, std::vector<Subscriber*>> watchers_;
  std::unordered_map<Subscriber*, Registrations> registrations_;
};

}  // namespace ddp::rendezvous
