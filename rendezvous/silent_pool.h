// Connections that sent nothing before their first-request deadline, grouped by peer address,
// oldest first. They are not closed at the deadline: a PyTorch 1.13 client opens a second
// connection it never writes to (for watchKey), and any client may connect and idle before its
// first query, so closing every silent connection would break real workers. Instead they become
// the first to go when a slot is needed: at the per-peer cap the peer's own oldest, at the total
// cap the oldest of the peer holding the most (rendezvous/server.cc). A connection that sent a
// part of a request and stalled is closed at its deadline (rendezvous/session_limits.cc).
//
// Pure bookkeeping: T is the session type, held by raw pointer; the owner removes an entry
// before the object goes away. Threading: one thread.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <cstddef>
#include <list>
#include <unordered_map>

namespace ddp::rendezvous {

template <typename T>
class SilentPool {
 public:
  struct Handle {
    boost::asio::ip::address peer;
    typename std::list<T*>::iterator it;
  };

  // Adds `item` as the newest silent connection of `peer` (normalized by the caller).
  Handle add(const boost::asio::ip::address& peer, T* item) {
    auto& list = by_peer_[peer];
    list.push_back(item);
    ++size_;
    return Handle{peer, std::prev(list.end())};
  }

  // Removes an entry added before and not yet removed or taken.
  void remove(const Handle& handle) {
    auto found = by_peer_.find(handle.peer);
    if (found == by_peer_.end()) return;
    found->second.erase(handle.it);
    --size_;
    if (found->second.empty()) by_peer_.erase(found);
  }

  // Takes the oldest entry of `peer`; nullptr when it has none. The caller forgets its handle.
  T* take_oldest(const boost::asio::ip::address& peer) {
    auto found = by_peer_.find(peer);
    if (found == by_peer_.end()) return nullptr;
    T* item = found->second.front();
    found->second.pop_front();
    --size_;
    if (found->second.empty()) by_peer_.erase(found);
    return item;
  }

  // Takes the oldest entry of the peer with the most entries; nullptr when empty.
  T* take_from_heaviest() {
    const boost::asio::ip::address* heaviest = nullptr;
    std::size_t most = 0;
    for (const auto& [peer, list] : by_peer_) {
      if (list.size() > most) {
        most = list.size();
        heaviest = &peer;
      }
    }
    return heaviest == nullptr ? nullptr : take_oldest(*heaviest);
  }

  std::size_t size() const { return size_; }
  std::size_t count(const boost::asio::ip::address& peer) const {
    auto found = by_peer_.find(peer);
    return found == by_peer_.end() ? 0 : found->second.size();
  }

 private:
  std::unordered_map<boost::asio::ip::address, std::list<T*>> by_peer_;
  std::size_t size_ = 0;
};

}  // namespace ddp::rendezvous
