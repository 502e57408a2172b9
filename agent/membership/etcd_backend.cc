#include "agent/membership/etcd_backend.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>

#include "rendezvous/membership/wire.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
namespace membership = rendezvous::membership;
using namespace std::chrono_literals;

etcd::ClientOptions call_options(const EtcdSettings& s) {
  // The first calls wait for etcd for read_timeout, but never past the join timeout.
  auto budget =
      std::min<std::chrono::milliseconds>(s.rdzv.connect_timeout, s.rdzv.config.join_timeout);
  return {.endpoints = s.endpoints,
          .request_timeout = std::max<std::chrono::milliseconds>(budget, 1s),
          .attempt_timeout = 2s,
          .transport = etcd_transport(s)};
}

etcd::ClientOptions keep_alive_options(const EtcdSettings& s) {
  auto third = std::chrono::duration_cast<std::chrono::milliseconds>(s.lease_ttl) / 3;
  return {.endpoints = s.endpoints,
          .request_timeout = std::max<std::chrono::milliseconds>(third, 300ms),
          .attempt_timeout = std::min<std::chrono::milliseconds>(
              std::max<std::chrono::milliseconds>(third, 300ms), 1s),
          .transport = etcd_transport(s)};
}

// One blocking call on a private io_context: for the last words, when no loop runs.
Result<etcd::Json> call_last(const EtcdSettings& s, std::chrono::milliseconds timeout,
                             const std::string& path, const etcd::Json& body) {
  etcd::ClientOptions last = keep_alive_options(s);
  last.request_timeout = timeout;
  return etcd::call_blocking(last, path, body);
}

Result<etcd::Json> revoke_blocking(const EtcdSettings& s, std::chrono::milliseconds timeout,
                                   std::int64_t lease) {
  return call_last(s, timeout, "/v3/lease/revoke", etcd::Json{{"ID", std::to_string(lease)}});
}

std::string finished_text(const membership::JobFinished& f) {
  return "exit code " + std::to_string(f.exit_code) + (f.reason.empty() ? "" : ": " + f.reason);
}

}  // namespace

proc::DeathWatch::LastWords lease_revoker(const EtcdSettings& settings) {
  return [settings](const std::string& note) {
    std::int64_t lease = 0;
    auto [end, ec] = std::from_chars(note.data(), note.data() + note.size(), lease);
    if (ec == std::errc() && end == note.data() + note.size() && lease != 0) {
      (void)revoke_blocking(settings, 2s, lease);
    }
  };
}

EtcdBackend::EtcdBackend(asio::io_context& io, const AgentConfig& config, const RunSetup& setup,
                         EtcdSettings settings, proc::DeathWatch* death_watch)
    : io_(io),
      config_(config),
      setup_(setup),
      settings_(std::move(settings)),
      keys_(settings_.prefix, setup.group.run_id),
      node_key_(advertised_addr() + ":" + std::to_string(::getpid())),
      servers_(io, config, settings_.rdzv, setup.group.run_id),
      client_(io.get_executor(), call_options(settings_)),
      keepalive_client_(io.get_executor(), keep_alive_options(settings_)),
      death_watch_(death_watch),
      keep_alive_timer_(io),
      progress_(io, [this] {
        if (!closed_ && !lost_ && !first_round_seen_) send(membership::QueryWaiting{});
      }) {}

EtcdBackend::~EtcdBackend() {
  close();
  if (lease_ == 0) return;
  // After a lost etcd, a short try: the exit must not wait on an unreachable etcd.
  const auto timeout = lost_ ? 300ms : 2s;
  if (leave_reason_) {
    auto key = keys_.request(node_key_, ++request_seq_);
    (void)call_last(
        settings_, timeout, "/v3/kv/put",
        etcd::op_put(key, membership::encode_request(membership::Leave{*leave_reason_}), lease_)
            .at("request_put"));
  }
  // Revoking deletes this node's keys at once: the others hear it left now, not at expiry.
  (void)revoke_blocking(settings_, timeout, lease_);
  // Tried: the death watch is not to try again after this process exits.
  if (death_watch_) death_watch_->clear_last_words();
}

Status EtcdBackend::start() { return servers_.start(); }

std::string EtcdBackend::advertised_addr() const {
  return config_.local_addr.empty() ? setup_.hostname : config_.local_addr;
}

void EtcdBackend::join(RendezvousEvents& events) {
  events_ = &events;
  asio::co_spawn(io_, run_join(), asio::detached);
}

asio::awaitable<void> EtcdBackend::run_join() {
  auto alive = alive_;
  const std::string where = etcd::join_endpoints(settings_.endpoints);
  auto lease = co_await client_.grant(settings_.lease_ttl);
  if (!*alive || closed_) co_return;
  if (!lease) {
    lost(Status(lease.status().code(),
                lease.status().message() +
                    "; start etcd (>= 3.4) there, check --rdzv-endpoint, or raise --rdzv-conf "
                    "read_timeout"));
    co_return;
  }
  lease_ = lease->id;
  if (lease->ttl > settings_.lease_ttl) {
    spdlog::warn(
        "etcd granted a lease of {} s for lease_ttl={}: its smallest (1.5 x its election "
        "timeout, rounded up); a lost node is noticed after {} s",
        lease->ttl.count(), settings_.lease_ttl.count(), lease->ttl.count());
  }
  // From here a death of this agent without its own revoke is revoked by the death watch.
  if (death_watch_) death_watch_->set_last_words(std::to_string(lease_));
  asio::co_spawn(io_, keep_alive(), asio::detached);

  auto finished = co_await client_.range(keys_.finished());
  if (!*alive || closed_) co_return;
  if (!finished) co_return lost(finished.status());
  if (!finished->kvs.empty()) {
    auto decoded = membership::decode_push(finished->kvs[0].value);
    auto* f = decoded.state == membership::DecodeState::kComplete
                  ? std::get_if<membership::JobFinished>(&decoded.message)
                  : nullptr;
    co_return lost(job_finished(
        "job '" + setup_.group.run_id + "' finished (" +
        (f ? finished_text(*f) : std::string("its record is not ddprun's")) +
        "); start a new job with a different --rdzv-id (etcd keeps " + keys_.finished() + ")"));
  }
  // Read, then watch from the next revision: this node's events, and the coordinator key.
  auto mine =
      co_await client_.range(keys_.events(node_key_), etcd::prefix_end(keys_.events(node_key_)));
  if (!*alive || closed_) co_return;
  if (!mine) co_return lost(mine.status());
  const auto reconnect = std::chrono::duration_cast<std::chrono::milliseconds>(settings_.lease_ttl);
  event_watch_ = etcd::Watch::start(
      io_.get_executor(), settings_.endpoints,
      {.key = keys_.events(node_key_),
       .range_end = etcd::prefix_end(keys_.events(node_key_)),
       .start_revision = mine->revision + 1,
       .reconnect_for = reconnect,
       .attempt_timeout = 2s,
       .transport = etcd_transport(settings_)},
      [this](std::vector<etcd::WatchEvent> events) { on_events(events); },
      [this](Status why) { lost(Status(why.code(), "lost etcd: " + why.message())); });
  coordinator_watch_ = etcd::Watch::start(
      io_.get_executor(), settings_.endpoints,
      {.key = keys_.coordinator(),
       .range_end = {},
       .start_revision = mine->revision + 1,
       .reconnect_for = reconnect,
       .attempt_timeout = 2s,
       .transport = etcd_transport(settings_)},
      [this](std::vector<etcd::WatchEvent> events) { on_coordinator_change(events); },
      [this](Status why) { lost(Status(why.code(), "lost etcd: " + why.message())); });
  co_await campaign();
  if (!*alive || closed_ || lost_) co_return;

  membership::JoinRequest join;
  join.run_id = setup_.group.run_id;
  join.config = settings_.rdzv.config;
  join.node.node_key = node_key_;
  join.node.addr = advertised_addr();
  join.node.store_port = servers_.store_port();
  join.node.local_world_size = static_cast<std::uint32_t>(config_.nproc_per_node);
  auto put = co_await client_.txn(
      etcd::put_if_absent(keys_.node(node_key_), membership::encode_request(join), lease_));
  if (!*alive || closed_) co_return;
  if (!put) co_return lost(put.status());
  if (!put->succeeded) {
    co_return lost(internal_error("node key " + keys_.node(node_key_) + " already exists"));
  }
  spdlog::info("joined job {} through etcd {} (node {}, lease {} s)", setup_.group.run_id, where,
               node_key_, settings_.lease_ttl.count());
  if (!first_round_seen_) progress_.start();
}

asio::awaitable<void> EtcdBackend::campaign() {
  auto alive = alive_;
  if (campaigning_ || coordinator_ || finished_) co_return;
  campaigning_ = true;
  auto r = co_await client_.txn(etcd::put_if_absent(keys_.coordinator(), node_key_, lease_));
  if (!*alive || closed_) co_return;
  campaigning_ = false;
  if (!r) co_return lost(r.status());
  if (!r->succeeded) co_return;
  // r->revision is the winning txn's: P/coordinator's create_revision, the fence.
  coordinator_ = std::make_unique<rendezvous::EtcdCoordinator>(
      io_, client_, keys_, setup_.group.run_id, lease_, node_key_, r->revision,
      coordinator_gone_revision_,
      [this](Status why) { lost(Status(why.code(), "coordinating the job: " + why.message())); });
  coordinator_->start();
}

asio::awaitable<void> EtcdBackend::keep_alive() {
  auto alive = alive_;
  auto last_ok = std::chrono::steady_clock::now();
  const auto period =
      std::chrono::duration_cast<std::chrono::milliseconds>(settings_.lease_ttl) / 3;
  for (;;) {
    // The lease's own rhythm: a keep-alive every third of its TTL (heartbeats, not polling).
    keep_alive_timer_.expires_after(period);
    auto [ec] = co_await keep_alive_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec || !*alive || closed_ || lost_) co_return;
    auto r = co_await keepalive_client_.keep_alive(lease_);
    if (!*alive || closed_ || lost_) co_return;
    if (r) {
      last_ok = std::chrono::steady_clock::now();
      continue;
    }
    if (r.status().code() == ErrorCode::kNotFound) {
      co_return lost(peer_gone("this node's etcd lease expired (etcd did not hear from it for " +
                               std::to_string(settings_.lease_ttl.count()) +
                               " s); the job counts it as gone"));
    }
    if (std::chrono::steady_clock::now() - last_ok >= settings_.lease_ttl) {
      co_return lost(peer_gone(
          "lost etcd (" + etcd::join_endpoints(settings_.endpoints) + ") for the lease TTL of " +
          std::to_string(settings_.lease_ttl.count()) + " s: " + r.status().message()));
    }
    spdlog::warn("etcd keep-alive failed ({}); retrying until the lease expires",
                 r.status().message());
  }
}

void EtcdBackend::on_coordinator_change(const std::vector<etcd::WatchEvent>& events) {
  if (closed_ || lost_ || finished_) return;
  bool freed = false;
  for (const auto& e : events) {
    if (!e.deleted) continue;
    freed = true;
    coordinator_gone_revision_ = e.kv.mod_revision;  // where a successor orders the loss
  }
  if (!freed) return;
  if (coordinator_) return;  // not this node's key: its lease is alive while this runs
  if (running_round_ && !stop_told_) {
    stop_told_ = true;
    events_->on_stop_workers(*running_round_,
                             "the node coordinating the job left; the job re-forms", false);
  }
  asio::co_spawn(io_, campaign(), asio::detached);
}

void EtcdBackend::on_events(const std::vector<etcd::WatchEvent>& events) {
  for (const auto& e : events) {
    if (closed_ || lost_ || finished_) return;
    if (e.deleted) continue;
    auto decoded = membership::decode_push(e.kv.value);
    if (decoded.state != membership::DecodeState::kComplete) {
      spdlog::warn("{} does not hold a ddprun event; ignored", e.kv.key);
      continue;
    }
    on_payload(decoded.message);
  }
}

void EtcdBackend::on_payload(const membership::Payload& payload) {
  if (auto* w = std::get_if<membership::Waiting>(&payload)) {
    if (!first_round_seen_) JoinProgress::report(*w);
    return;
  }
  if (auto* j = std::get_if<membership::Joined>(&payload)) {
    if (j->waiting) {
      progress_.stop();  // admitted at the next round, which its arrival triggers
      spdlog::info("job {}: a round is running; this node joins at round {}", setup_.group.run_id,
                   j->round);
    }
    return;
  }
  if (auto* r = std::get_if<membership::RoundComplete>(&payload)) return on_round(*r);
  if (auto* s = std::get_if<membership::StopWorkers>(&payload)) {
    if (running_round_ && *running_round_ == s->round) stop_told_ = true;
    return events_->on_stop_workers(s->round, s->detail,
                                    s->first_failure && s->first_failure->hung);
  }
  if (auto* f = std::get_if<membership::JobFinished>(&payload)) {
    finished_ = true;
    progress_.stop();
    return events_->on_job_finished(*f);
  }
  if (auto* e = std::get_if<membership::ErrorEvent>(&payload)) return lost(lost_status(*e));
}

void EtcdBackend::on_round(const membership::RoundComplete& r) {
  if (running_round_ && r.round > *running_round_) {
    // A new coordinator formed the next round before this node stopped the last one.
    held_round_ = r;
    if (!stop_told_) {
      stop_told_ = true;
      events_->on_stop_workers(*running_round_, "the job re-formed", false);
    }
    return;
  }
  deliver_round(r);
}

void EtcdBackend::deliver_round(const membership::RoundComplete& r) {
  Round round = round_of(r);
  spdlog::info("round {}: group rank {} of {}, ranks {}..{} of {}, restart {}, worker store {}:{}",
               r.round, r.group_rank, r.group_world_size, r.rank_offset,
               r.rank_offset + r.local_world_size - 1, r.world_size, r.restart_count,
               round.store_addr, round.store_port);
  if (r.group_rank == 0) servers_.begin_store_round();
  first_round_seen_ = true;
  progress_.stop();
  running_round_ = r.round;
  stop_told_ = false;
  events_->on_round(round);
}

void EtcdBackend::answered(std::uint64_t round) {
  if (running_round_ && *running_round_ == round) running_round_.reset();
  if (held_round_ && !running_round_) {
    auto r = *held_round_;
    held_round_.reset();
    asio::post(io_, [this, r, alive = alive_] {
      if (*alive && !closed_ && !lost_ && !finished_) deliver_round(r);
    });
  }
}

void EtcdBackend::send(const membership::Request& request) {
  if (lease_ == 0 || closed_) return;
  std::string key = keys_.request(node_key_, ++request_seq_);
  std::string value = membership::encode_request(request);
  asio::co_spawn(
      io_,
      [this, alive = alive_, key = std::move(key),
       value = std::move(value)]() -> asio::awaitable<void> {
        auto r = co_await client_.put(key, value, lease_);
        if (!*alive || closed_) co_return;
        if (!r) lost(Status(r.status().code(), "cannot report to etcd: " + r.status().message()));
      },
      asio::detached);
}

void EtcdBackend::report_success(std::uint64_t round) {
  spdlog::info("round {}: all local workers succeeded; waiting for the other nodes", round);
  send(membership::ReportSuccess{round});
  answered(round);
}

void EtcdBackend::report_failure(std::uint64_t round, std::vector<membership::Failure> failures) {
  send(membership::ReportFailure{round, std::move(failures)});
  answered(round);
}

void EtcdBackend::workers_stopped(std::uint64_t round) {
  send(membership::WorkersStopped{round});
  answered(round);
}

void EtcdBackend::leave(const std::string& reason) { leave_reason_ = reason; }

void EtcdBackend::wait_finished(std::function<void()> done) {
  if (coordinator_) return coordinator_->when_drained(std::move(done));
  asio::post(io_, std::move(done));
}

void EtcdBackend::lost(Status why) {
  if (closed_ || lost_) return;
  lost_ = true;
  progress_.stop();
  if (events_) events_->on_lost(why);
}

void EtcdBackend::close() {
  if (closed_) return;
  closed_ = true;
  *alive_ = false;
  keep_alive_timer_.cancel();
  progress_.stop();
  if (coordinator_) coordinator_->stop();
  if (event_watch_) event_watch_->cancel();
  if (coordinator_watch_) coordinator_watch_->cancel();
  servers_.stop();
}

}  // namespace ddp::agent
