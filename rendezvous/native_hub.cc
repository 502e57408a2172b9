#include "rendezvous/native_hub.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "rendezvous/membership/wire.h"

namespace ddp::rendezvous {

using rendezvous::membership::Clock;

// A deadline timer this late means the daemon did not run (it is normally a few ms late).
constexpr auto kPausedAfter = std::chrono::milliseconds(500);

NativeHub::NativeHub(boost::asio::any_io_executor executor,
                     rendezvous::membership::RegistryOptions options, AuthOptions auth)
    : registry_(options), gate_(auth.require_secret), timer_(std::move(executor)) {
  for (auto& pinned : auth.pinned) gate_.pin(pinned.run_id, pinned.key);
}

NativeHub::~NativeHub() { stop(); }

rendezvous::membership::NodeId NativeHub::attach(NativePeer& peer) {
  const rendezvous::membership::NodeId id = next_id_++;
  peers_.emplace(id, &peer);
  return id;
}

void NativeHub::handle(rendezvous::membership::NodeId id, rendezvous::membership::Request request) {
  if (auth_.count(id) != 0) {
    return refuse(id, unauthenticated("this connection sent AUTH_HELLO: every rendezvous request "
                                      "on it must be an AUTH_FRAME"));
  }
  if (const auto* join = std::get_if<rendezvous::membership::JoinRequest>(&request)) {
    if (Status s = gate_.check_plain_join(join->run_id); !s) return refuse(id, s);
    if (exposed_ && !warned_keyless_ && registry_.find(join->run_id) == nullptr) {
      warned_keyless_ = true;
      spdlog::warn(
          "job '{}' has no secret and this daemon listens on a non-loopback address: anyone who "
          "can reach it can join or stop such jobs; give jobs a secret (--rdzv-conf "
          "secret_file=PATH or DDPRUN_SECRET) and run the daemon with --require-secret",
          join->run_id);
    }
  }
  dispatch(id, std::move(request));
}

void NativeHub::dispatch(rendezvous::membership::NodeId id,
                         rendezvous::membership::Request request) {
  deliver(registry_.handle(id, std::move(request), Clock::now()));
  rearm();
  notify_drained();
}

void NativeHub::refuse(rendezvous::membership::NodeId id, const Status& why) {
  spdlog::warn("rendezvous node {} refused: {}", id, why.message());
  deliver({{id, rendezvous::membership::ErrorEvent{why.code(), why.message()}}});
}

void NativeHub::hello(rendezvous::membership::NodeId id, const std::string& run_id) {
  auto peer = peers_.find(id);
  if (peer == peers_.end()) return;
  // A key whose job has gone (finished and forgotten, or never formed) is forgotten too.
  if (registry_.find(run_id) == nullptr) gate_.settle(run_id, false);
  if (auth_.count(id) != 0) {
    return refuse(id, unauthenticated("AUTH_HELLO sent twice on one connection; open one "
                                      "connection per job"));
  }
  // Made at the first AUTH_HELLO, not at start: most servers (every workers' store, a job
  // without a secret) never see one, and the key pair is what initialises libcrypto.
  if (!daemon_key_) {
    auto pair = auth::generate_key_pair();
    if (!pair) {
      return refuse(id, internal_error("no key pair for job secrets: " + pair.status().message()));
    }
    daemon_key_ = *pair;
  }
  auto challenge = auth::random_bytes32();
  if (!challenge) return refuse(id, challenge.status());
  auth::ConnectionAuth conn;
  conn.run_id = run_id;
  conn.challenge = *challenge;
  auth_.emplace(id, std::move(conn));
  peer->second->push(encode_challenge({*challenge, gate_.keyed(run_id), daemon_key_->public_key}));
}

void NativeHub::handle_auth(rendezvous::membership::NodeId id, const AuthFrame& frame,
                            rendezvous::membership::Request request) {
  auto conn = auth_.find(id);
  if (conn == auth_.end()) {
    return refuse(id, unauthenticated("AUTH_FRAME before AUTH_HELLO; send AUTH_HELLO first"));
  }
  const auto* join = std::get_if<rendezvous::membership::JoinRequest>(&request);
  auth::FrameCheck check;
  check.counter = frame.counter;
  check.mac = frame.mac;
  check.wrap = frame.wrap;
  check.covered = frame.covered;
  check.is_join = join != nullptr;
  if (join != nullptr) check.join_run_id = join->run_id;
  const std::string run_id = conn->second.run_id;
  if (Status s = gate_.verify(conn->second, check, registry_.find(run_id) != nullptr, *daemon_key_);
      !s) {
    return refuse(id, s);
  }
  const bool is_join = join != nullptr;
  dispatch(id, std::move(request));
  if (is_join) gate_.settle(run_id, registry_.find(run_id) != nullptr);
}

void NativeHub::touch(rendezvous::membership::NodeId id) {
  // Not a JOINed node yet: nothing to refresh (the registry's error reply is dropped).
  (void)registry_.handle(id, rendezvous::membership::Heartbeat{}, Clock::now());
  rearm();
}

void NativeHub::closed(rendezvous::membership::NodeId id) {
  if (peers_.erase(id) == 0) return;
  auth_.erase(id);
  // A stopping server closes every connection: each node learns that from its own closure.
  // Judged as departures, the first closures would end the job for the nodes closed later,
  // though on etcd the job goes on under another host (a spare told "failed" would exit).
  if (stopped_) return;
  deliver(registry_.connection_closed(id, Clock::now()));
  rearm();
  notify_drained();
}

void NativeHub::when_drained(std::string run_id, std::function<void()> done) {
  if (stopped_) return;
  drain_waiters_.emplace_back(std::move(run_id), std::move(done));
  notify_drained();
}

bool NativeHub::drained(const std::string& run_id) const {
  const rendezvous::membership::Job* job = registry_.find(run_id);
  const bool finished =
      job == nullptr || job->state() == rendezvous::membership::Job::State::kFinished;
  return finished && registry_.connections(run_id) == 0;
}

void NativeHub::notify_drained() {
  std::vector<std::function<void()>> ready;
  std::erase_if(drain_waiters_, [&](auto& waiter) {
    if (!drained(waiter.first)) return false;
    ready.push_back(std::move(waiter.second));
    return true;
  });
  for (auto& done : ready) done();
}

void NativeHub::stop() {
  stopped_ = true;
  drain_waiters_.clear();
  armed_.reset();
  timer_.cancel();
}

void NativeHub::deliver(const rendezvous::membership::Events& events) {
  // One encoding per distinct payload would save work on fan-outs, but events to different
  // nodes differ (ranks) except StopWorkers/JobFinished; encoding is ~100 ns, so keep it simple.
  for (const rendezvous::membership::Event& event : events) {
    auto it = peers_.find(event.to);
    if (it == peers_.end()) continue;  // closed in the meantime: nothing to tell
    it->second->push(rendezvous::membership::encode_push(event.payload));
  }
}

void NativeHub::rearm() {
  if (stopped_) return;
  const auto next = registry_.next_deadline();
  if (next == armed_) return;
  armed_ = next;
  if (!next) {
    timer_.cancel();
    return;
  }
  timer_.expires_at(*next);  // cancels a pending wait (its handler sees operation_aborted)
  timer_.async_wait(life_.guard([this](boost::system::error_code ec) {
    // Re-armed, stopped or destroyed: touch nothing.
    if (!ec) on_timer();
  }));
}

void NativeHub::on_timer() {
  const auto now = Clock::now();
  // Fired far past its deadline: this process was paused (SIGSTOP, a VM freeze) or starved.
  // The heartbeats sent meanwhile still wait unread in the sockets; nobody is removed for a
  // silence the daemon could not hear (the agents judge the daemon's own silence).
  if (armed_ && now - *armed_ > kPausedAfter) {
    spdlog::warn(
        "the rendezvous daemon was paused for {} ms; every node's heartbeat budget "
        "starts again",
        std::chrono::duration_cast<std::chrono::milliseconds>(now - *armed_).count());
    registry_.pardon(now);
  }
  armed_.reset();
  deliver(registry_.on_deadline(now));
  rearm();
}

}  // namespace ddp::rendezvous
