// NativeHub, the job-secret part: AUTH_HELLO, AUTH_OPEN (and opens parked while their job's
// key is being registered, open_parking.h) and AUTH_FRAME, judged by the auth::Gate.
#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "common/wall_clock.h"
#include "rendezvous/native_hub.h"

namespace ddp::rendezvous {
namespace {

// How long opens wait for their job's first JOIN to register its key before they are
// challenged: far beyond one round trip, short enough that an agent that opens and goes silent
// delays the others by little.
constexpr auto kRegistrationWait = std::chrono::seconds(1);

const char* describe(auth::OpenVerdict verdict) {
  switch (verdict) {
    case auth::OpenVerdict::kAccept:
      return "accepted";
    case auth::OpenVerdict::kUnknownKey:
      return "the job's key is not known yet";
    case auth::OpenVerdict::kOutsideWindow:
      return "its clock is outside the window";
    case auth::OpenVerdict::kTooSoonAfterStart:
      return "the daemon started too recently";
    case auth::OpenVerdict::kSeen:
      return "its nonce was used before";
    case auth::OpenVerdict::kMemoryFull:
      return "too many recent opens";
  }
  return "?";
}

}  // namespace

auth::ConnectionAuth* NativeHub::bind(rendezvous::membership::NodeId id,
                                      const std::string& run_id) {
  if (peers_.find(id) == peers_.end()) return nullptr;
  // A key whose job has gone (finished and forgotten, or never formed) is forgotten too.
  if (registry_.find(run_id) == nullptr) gate_.settle(run_id, false);
  if (auth_.count(id) != 0) {
    refuse(id, unauthenticated("AUTH_HELLO or AUTH_OPEN sent twice on one connection; open one "
                               "connection per job"));
    return nullptr;
  }
  if (!daemon_key_) {
    refuse(id, internal_error("this daemon has no key pair for secrets"));
    return nullptr;
  }
  auth::ConnectionAuth conn;
  conn.run_id = run_id;
  return &auth_.emplace(id, std::move(conn)).first->second;
}

void NativeHub::send_challenge(rendezvous::membership::NodeId id, auth::ConnectionAuth& conn) {
  auto challenge = auth::random_bytes32();
  if (!challenge) {
    auth_.erase(id);
    return refuse(id, challenge.status());
  }
  conn.challenge = *challenge;
  peers_.at(id)->push(
      encode_challenge({*challenge, gate_.keyed(conn.run_id), daemon_key_->public_key}));
}

void NativeHub::hello(rendezvous::membership::NodeId id, const std::string& run_id) {
  if (auth::ConnectionAuth* conn = bind(id, run_id)) send_challenge(id, *conn);
}

void NativeHub::open(rendezvous::membership::NodeId id, const AuthOpen& open) {
  auth::ConnectionAuth* conn = bind(id, open.run_id);
  if (conn == nullptr) return;
  const auth::OpenVerdict verdict = gate_.open(*conn, open.nonce, open.unix_ms, unix_ms_now());
  if (verdict == auth::OpenVerdict::kUnknownKey && parking_.registration_pending(open.run_id)) {
    parking_.park(id, open);  // judged once the job's first JOIN was handled
    return;
  }
  conclude_open(id, *conn, verdict);
}

void NativeHub::conclude_open(rendezvous::membership::NodeId id, auth::ConnectionAuth& conn,
                              auth::OpenVerdict verdict) {
  if (verdict == auth::OpenVerdict::kAccept) {
    ++open_counts_.without_challenge;
    return;
  }
  ++open_counts_.challenged;
  spdlog::debug("rendezvous node {} (job '{}') is challenged: {}", id, conn.run_id,
                describe(verdict));
  if (verdict == auth::OpenVerdict::kUnknownKey) {
    // Its JOIN may register the key: the job's other opens wait for it (open_parking.h).
    parking_.registering(conn.run_id, id, rendezvous::membership::Clock::now() + kRegistrationWait);
    rearm_parking();
  }
  conn.drop_next_frame = true;
  send_challenge(id, conn);
}

void NativeHub::judge_parked(std::vector<OpenParking::Parked> parked) {
  for (OpenParking::Parked& p : parked) {
    auto conn = auth_.find(p.id);
    if (conn == auth_.end()) continue;  // closed meanwhile
    const auth::OpenVerdict verdict =
        gate_.open(conn->second, p.open.nonce, p.open.unix_ms, unix_ms_now());
    conclude_open(p.id, conn->second, verdict);
    if (p.frame) handle_auth(p.id, p.frame->first, std::move(p.frame->second));
  }
  rearm_parking();
}

void NativeHub::rearm_parking() {
  if (stopped_) return;
  const auto next = parking_.next_deadline();
  if (!next) {
    parking_timer_.cancel();
    return;
  }
  parking_timer_.expires_at(*next);
  parking_timer_.async_wait(
      [this, alive = std::weak_ptr<int>(alive_)](boost::system::error_code ec) {
        if (ec || alive.expired()) return;
        judge_parked(parking_.expire(rendezvous::membership::Clock::now()));
      });
}

void NativeHub::handle_auth(rendezvous::membership::NodeId id, const AuthFrame& frame,
                            rendezvous::membership::Request request) {
  auto conn = auth_.find(id);
  if (conn == auth_.end()) {
    return refuse(id, unauthenticated("AUTH_FRAME before AUTH_HELLO; send AUTH_HELLO first"));
  }
  if (parking_.parked(id)) {
    // The optimistic JOIN of a parked open: handled with it once the open is judged.
    if (!parking_.hold(id, frame, std::move(request))) {
      refuse(id, unauthenticated("a second frame before JOINED or a CHALLENGE; wait for one"));
    }
    return;
  }
  const auto* join = std::get_if<rendezvous::membership::JoinRequest>(&request);
  auth::FrameCheck check;
  check.counter = frame.counter;
  check.mac = frame.mac;
  check.wrap = frame.wrap;
  check.covered = frame.covered;
  check.is_join = join != nullptr;
  if (join != nullptr) check.join_run_id = join->run_id;
  if (conn->second.drop_next_frame) {
    // The optimistic JOIN after an AUTH_OPEN that was answered with a CHALLENGE: it was MACed
    // before the agent could see the challenge; the agent sends it again under it.
    conn->second.drop_next_frame = false;
    return gate_.dropped(conn->second, check, unix_ms_now());
  }
  const std::string run_id = conn->second.run_id;
  if (Status s = gate_.verify(conn->second, check, registry_.find(run_id) != nullptr, *daemon_key_,
                              unix_ms_now());
      !s) {
    refuse(id, s);
  } else {
    const bool is_join = join != nullptr;
    dispatch(id, std::move(request));
    if (is_join) gate_.settle(run_id, registry_.find(run_id) != nullptr);
  }
  // A registrar's challenged JOIN was handled (its key kept, or refused): the opens parked
  // behind it are judged now.
  if (const std::string* registering = parking_.registered_by(id)) {
    const std::string parked_run = *registering;
    judge_parked(parking_.release(parked_run));
  }
}

}  // namespace ddp::rendezvous
