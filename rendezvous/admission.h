// Admission of new connections by the store server: a cap on connections in total and per
// peer address, counted while they are open. Pure: no I/O, no clock; the server asks before it
// starts a session and the session's Ticket gives the slot back when it closes.
//
// Peers are counted by IP address alone (ports differ per connection); an IPv4-mapped IPv6
// address (::ffff:a.b.c.d, what a dual-stack listener reports for IPv4 clients) counts as the
// IPv4 address.
//
// Threading: one thread (the server's io_context). The Admission outlives every Ticket.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <cstddef>
#include <unordered_map>

namespace ddp::rendezvous {

// The IPv4 address for an IPv4-mapped IPv6 one; any other address unchanged.
boost::asio::ip::address normalize_peer(const boost::asio::ip::address& address);

enum class AdmitResult { kAdmitted, kTotalFull, kPeerFull };

class Admission {
 public:
  // Holds one admitted connection's slot; releases it when destroyed. Move-only.
  class Ticket {
   public:
    Ticket() = default;
    ~Ticket() { reset(); }
    Ticket(Ticket&& other) noexcept : owner_(other.owner_), peer_(other.peer_) {
      other.owner_ = nullptr;
    }
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    void reset();
    bool held() const { return owner_ != nullptr; }

   private:
    friend class Admission;
    Ticket(Admission* owner, boost::asio::ip::address peer) : owner_(owner), peer_(peer) {}
    Admission* owner_ = nullptr;
    boost::asio::ip::address peer_;
  };

  // 0 in either means no cap of that kind.
  Admission(std::size_t max_total, std::size_t max_per_peer)
      : max_total_(max_total), max_per_peer_(max_per_peer) {}
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // Counts a new connection from `peer` when both caps allow it; the ticket is held then.
  AdmitResult admit(const boost::asio::ip::address& peer, Ticket& ticket);

  std::size_t total() const { return total_; }
  std::size_t count(const boost::asio::ip::address& peer) const;
  std::size_t peers() const { return per_peer_.size(); }

 private:
  void release(const boost::asio::ip::address& peer);

  std::size_t max_total_;
  std::size_t max_per_peer_;
  std::size_t total_ = 0;
  std::unordered_map<boost::asio::ip::address, std::size_t> per_peer_;
};

}  // namespace ddp::rendezvous
