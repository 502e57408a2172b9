#include "rendezvous/open_parking.h"

#include <algorithm>

namespace ddp::rendezvous {

void OpenParking::registering(const std::string& run_id, NodeId registrar, TimePoint deadline) {
  if (registrations_.count(run_id) != 0) return;
  registrations_.emplace(run_id, Registration{registrar, deadline, {}});
  registrars_.emplace(registrar, run_id);
}

bool OpenParking::registration_pending(const std::string& run_id) const {
  return registrations_.count(run_id) != 0;
}

const std::string* OpenParking::registered_by(NodeId id) const {
  auto it = registrars_.find(id);
  return it == registrars_.end() ? nullptr : &it->second;
}

void OpenParking::park(NodeId id, AuthOpen open) {
  auto reg = registrations_.find(open.run_id);
  if (reg == registrations_.end()) return;
  reg->second.parked.push_back(id);
  parked_run_.emplace(id, open.run_id);
  parked_.emplace(id, Parked{id, std::move(open), std::nullopt});
}

bool OpenParking::parked(NodeId id) const { return parked_.count(id) != 0; }

bool OpenParking::hold(NodeId id, AuthFrame frame, rendezvous::membership::Request request) {
  auto it = parked_.find(id);
  if (it == parked_.end() || it->second.frame) return false;
  it->second.frame.emplace(std::move(frame), std::move(request));
  return true;
}

std::vector<OpenParking::Parked> OpenParking::release(const std::string& run_id) {
  std::vector<Parked> out;
  auto reg = registrations_.find(run_id);
  if (reg == registrations_.end()) return out;
  for (NodeId id : reg->second.parked) {
    auto p = parked_.find(id);
    if (p == parked_.end()) continue;  // closed meanwhile
    out.push_back(std::move(p->second));
    parked_.erase(p);
    parked_run_.erase(id);
  }
  registrars_.erase(reg->second.registrar);
  registrations_.erase(reg);
  return out;
}

std::vector<OpenParking::Parked> OpenParking::forget(NodeId id) {
  if (auto run = parked_run_.find(id); run != parked_run_.end()) {
    parked_.erase(id);
    auto reg = registrations_.find(run->second);
    if (reg != registrations_.end()) std::erase(reg->second.parked, id);
    parked_run_.erase(run);
  }
  auto registrar = registrars_.find(id);
  if (registrar == registrars_.end()) return {};
  const std::string run_id = registrar->second;
  return release(run_id);
}

std::vector<OpenParking::Parked> OpenParking::expire(TimePoint now) {
  std::vector<std::string> due;
  for (const auto& [run_id, reg] : registrations_) {
    if (reg.deadline <= now) due.push_back(run_id);
  }
  std::vector<Parked> out;
  for (const std::string& run_id : due) {
    auto released = release(run_id);
    std::move(released.begin(), released.end(), std::back_inserter(out));
  }
  return out;
}

std::optional<OpenParking::TimePoint> OpenParking::next_deadline() const {
  std::optional<TimePoint> next;
  for (const auto& [run_id, reg] : registrations_) {
    if (!next || reg.deadline < *next) next = reg.deadline;
  }
  return next;
}

}  // namespace ddp::rendezvous
