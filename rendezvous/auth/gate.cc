#include "rendezvous/auth/gate.h"

namespace ddp::rendezvous::auth {

void Gate::pin(std::string run_id, const Key& key) {
  keys_.insert_or_assign(std::move(run_id), Entry(key, true));
}

bool Gate::keyed(std::string_view run_id) const {
  return keys_.find(std::string(run_id)) != keys_.end();
}

Status Gate::check_plain_join(std::string_view run_id) const {
  if (keyed(run_id)) {
    return unauthenticated("job '" + std::string(run_id) +
                           "' requires its secret and this agent has none; pass the job's "
                           "secret with --rdzv-conf secret_file=PATH or DDPRUN_SECRET");
  }
  if (require_secret_) {
    return unauthenticated("this rendezvous daemon runs with --require-secret and job '" +
                           std::string(run_id) +
                           "' has no secret; pass one with --rdzv-conf secret_file=PATH or "
                           "DDPRUN_SECRET");
  }
  return Status::ok();
}

Status Gate::verify(ConnectionAuth& conn, const FrameCheck& frame, bool job_exists,
                    const KeyPair& daemon) {
  candidate_.reset();
  const std::string& run_id = conn.run_id;
  if (frame.is_join && frame.join_run_id != run_id) {
    return unauthenticated("JOIN for job '" + std::string(frame.join_run_id) +
                           "' on a connection opened for job '" + run_id +
                           "'; open one connection per job");
  }
  Mac expected{};
  std::optional<Key> fresh;  // the key a first JOIN registers (trust on first use)
  if (auto it = keys_.find(run_id); it != keys_.end()) {
    expected = frame_mac(it->second.mac, conn.challenge, frame.counter, run_id, frame.covered);
  } else if (job_exists) {
    return unauthenticated("job '" + run_id +
                           "' runs without a secret and this agent has one; every agent of a "
                           "job must use the same secret, or none");
  } else if (!frame.wrap) {
    return unauthenticated("job '" + run_id +
                           "' is unknown to this daemon and the frame registers no key; send "
                           "JOIN first");
  } else {
    auto unwrapped = unwrap_job_key(*frame.wrap, daemon, conn.challenge);
    if (!unwrapped) return unwrapped.status();
    fresh = *unwrapped;
    expected = frame_mac(*fresh, conn.challenge, frame.counter, run_id, frame.covered);
  }
  if (!same_mac(expected, frame.mac)) {
    return unauthenticated("job '" + run_id +
                           "' refused this agent: its secret does not match the job's; every "
                           "agent of a job must use the same secret");
  }
  if (!conn.counter.accept(frame.counter)) {
    return unauthenticated("job '" + run_id + "': frame counter " + std::to_string(frame.counter) +
                           " where " + std::to_string(conn.counter.next()) +
                           " was expected (a replayed or reordered frame)");
  }
  if (fresh) {
    if (!frame.is_join) {
      return unauthenticated("job '" + run_id + "' is unknown to this daemon; send JOIN first");
    }
    candidate_.emplace(run_id, *fresh);
  }
  return Status::ok();
}

void Gate::settle(const std::string& run_id, bool job_exists) {
  auto candidate = std::move(candidate_);
  candidate_.reset();
  auto it = keys_.find(run_id);
  if (it == keys_.end()) {
    if (candidate && candidate->first == run_id && job_exists) {
      keys_.emplace(run_id, Entry(candidate->second, false));
    }
    return;
  }
  if (!job_exists && !it->second.pinned) keys_.erase(it);
}

}  // namespace ddp::rendezvous::auth
