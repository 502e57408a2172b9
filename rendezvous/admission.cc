#include "rendezvous/admission.h"

namespace ddp::rendezvous {

namespace ip = boost::asio::ip;

ip::address normalize_peer(const ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return ip::make_address_v4(ip::v4_mapped, address.to_v6());
  }
  return address;
}

Admission::Ticket& Admission::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = other.owner_;
    peer_ = other.peer_;
    other.owner_ = nullptr;
  }
  return *this;
}

void Admission::Ticket::reset() {
  if (owner_ == nullptr) return;
  owner_->release(peer_);
  owner_ = nullptr;
}

AdmitResult Admission::admit(const ip::address& peer, Ticket& ticket) {
  const ip::address key = normalize_peer(peer);
  if (max_total_ != 0 && total_ >= max_total_) return AdmitResult::kTotalFull;
  if (max_per_peer_ != 0 && count(key) >= max_per_peer_) return AdmitResult::kPeerFull;
  ++total_;
  ++per_peer_[key];
  ticket = Ticket(this, key);
  return AdmitResult::kAdmitted;
}

std::size_t Admission::count(const ip::address& peer) const {
  auto it = per_peer_.find(normalize_peer(peer));
  return it == per_peer_.end() ? 0 : it->second;
}

void Admission::release(const ip::address& peer) {
  auto it = per_peer_.find(peer);
  if (it == per_peer_.end()) return;
  --total_;
  if (--it->second == 0) per_peer_.erase(it);
}

}  // namespace ddp::rendezvous
