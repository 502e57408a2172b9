// Opens that wait for their job's key (job secrets, issue 21). A standalone daemon learns a
// job's key from the job's first authenticated JOIN (trust on first use): the first agent's
// AUTH_OPEN is challenged, and its challenged JOIN, one round trip later, registers the key.
// Agents whose opens arrive meanwhile would be challenged too (the key is not known yet); they
// are parked instead, each with the optimistic JOIN frame that follows its open, and judged
// as if they had just arrived once the registration ends: the registrar's JOIN was handled
// (registered or refused), its connection closed, or the registration's deadline passed.
// So the agents of a job that start together pay one round trip (the first one's), not one
// each. A registration that never comes (an agent that opens and stays silent) holds the
// others for at most the deadline; they are then challenged as before.
//
// Pure bookkeeping: no I/O, no timers; the NativeHub acts on what it returns.
// Threading: the daemon's io_context thread. Not thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rendezvous/membership/config.h"
#include "rendezvous/membership/messages.h"
#include "rendezvous/protocol.h"

namespace ddp::rendezvous {

class OpenParking {
 public:
  using NodeId = rendezvous::membership::NodeId;
  using TimePoint = rendezvous::membership::TimePoint;

  struct Parked {
    NodeId id = 0;
    AuthOpen open;
    // The optimistic JOIN frame, once it arrived.
    std::optional<std::pair<AuthFrame, rendezvous::membership::Request>> frame;
  };

  // `registrar` was challenged because `run_id`'s key is unknown: its JOIN may register it.
  // Until `deadline`; a registration already in flight for `run_id` is kept.
  void registering(const std::string& run_id, NodeId registrar, TimePoint deadline);
  bool registration_pending(const std::string& run_id) const;
  // The run id `id` registers, if it is a registrar.
  const std::string* registered_by(NodeId id) const;

  // Parks `id`'s open; precondition: registration_pending(open.run_id).
  void park(NodeId id, AuthOpen open);
  bool parked(NodeId id) const;
  // Holds the frame parked connection `id` sent after its open. False when `id` already holds
  // one (an agent sends nothing more before JOINED or a CHALLENGE).
  bool hold(NodeId id, AuthFrame frame, rendezvous::membership::Request request);

  // Ends `run_id`'s registration: its parked opens, in arrival order.
  std::vector<Parked> release(const std::string& run_id);
  // Connection `id` closed: a registration it held ends (its parked opens are returned); a
  // parked open of its is dropped.
  std::vector<Parked> forget(NodeId id);
  // Ends every registration whose deadline is at or before `now`.
  std::vector<Parked> expire(TimePoint now);
  std::optional<TimePoint> next_deadline() const;

 private:
  struct Registration {
    NodeId registrar = 0;
    TimePoint deadline{};
    std::vector<NodeId> parked;  // arrival order
  };
  std::unordered_map<std::string, Registration> registrations_;
  std::unordered_map<NodeId, std::string> registrars_;  // registrar -> run id
  std::unordered_map<NodeId, Parked> parked_;
  std::unordered_map<NodeId, std::string> parked_run_;  // parked -> run id
};

}  // namespace ddp::rendezvous
