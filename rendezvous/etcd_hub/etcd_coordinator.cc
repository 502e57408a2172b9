#include "rendezvous/etcd_hub/etcd_coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "rendezvous/membership/wire.h"

namespace ddp::rendezvous {
namespace {

namespace asio = boost::asio;
namespace membership = rendezvous::membership;
using membership::Clock;

constexpr const char* kLeaseGone = "its etcd lease expired or was revoked";

}  // namespace

EtcdCoordinator::EtcdCoordinator(asio::io_context& io, etcd::Client& client, EtcdKeys keys,
                                 std::string run_id, std::int64_t lease, std::string own_node_key,
                                 std::int64_t fence_revision, std::int64_t gone_revision,
                                 std::function<void(Status)> on_fatal)
    : io_(io),
      client_(client),
      keys_(std::move(keys)),
      run_id_(std::move(run_id)),
      lease_(lease),
      own_node_key_(std::move(own_node_key)),
      fence_revision_(fence_revision),
      gone_revision_(gone_revision),
      on_fatal_(std::move(on_fatal)),
      registry_({.external_liveness = true}),
      timer_(io) {}

EtcdCoordinator::~EtcdCoordinator() { stop(); }

void EtcdCoordinator::start() { asio::co_spawn(io_, run(), asio::detached); }

void EtcdCoordinator::stop() {
  if (stopped_) return;
  stopped_ = true;
  life_.end();
  timer_.cancel();
  if (watch_) watch_->cancel();
}

void EtcdCoordinator::fatal(Status why) {
  if (stopped_) return;
  spdlog::error("coordinating job {}: {}", run_id_, why.message());
  stop();
  on_fatal_(why);
}

asio::awaitable<void> EtcdCoordinator::run() {
  auto alive = life_.watch();
  Status s = co_await take_over();
  if (!alive) co_return;
  if (!s) fatal(s);
}

asio::awaitable<Status> EtcdCoordinator::take_over() {
  auto alive = life_.watch();
  // The job's end, if it came: every node present is told again (the previous coordinator
  // may have died before they all heard it); nothing else happens.
  auto finished = co_await client_.range(keys_.finished());
  if (!alive) co_return Status::ok();
  if (!finished) co_return finished.status();
  if (!finished->kvs.empty()) {
    auto decoded = membership::decode_push(finished->kvs[0].value);
    if (decoded.state == membership::DecodeState::kComplete) {
      if (auto* f = std::get_if<membership::JobFinished>(&decoded.message)) finished_ = *f;
    }
  }
  auto state = co_await client_.range(keys_.state());
  if (!alive) co_return Status::ok();
  if (!state) co_return state.status();
  std::optional<JobState> facts;
  if (!state->kvs.empty()) {
    facts = decode_job_state(state->kvs[0]);
    if (facts) {
      resume_round_ = facts->round + 1;
      registry_.resume(run_id_, {facts->round + 1, facts->restart_count, facts->departures});
      state_round_ = facts->round;
    } else {
      spdlog::warn("{} does not hold ddprun's job state; ignored", keys_.state());
    }
  }
  // Nodes and requests at one revision (P/nodes/ sorts before P/req/, and nothing of the
  // job's lies between them).
  const std::string from = keys_.nodes();
  const std::string to = etcd::prefix_end(keys_.requests());
  auto present = co_await client_.range(from, to);
  if (!alive) co_return Status::ok();
  if (!present) co_return present.status();
  std::vector<etcd::KeyValue> nodes, requests;
  for (auto& kv : present->kvs) {
    if (keys_.node_of(kv.key)) {
      nodes.push_back(std::move(kv));
    } else if (keys_.requester_of(kv.key)) {
      requests.push_back(std::move(kv));
    }
  }
  const TakeoverPlan plan =
      plan_takeover(keys_, finished_ ? std::nullopt : facts, nodes, requests, gone_revision_);
  if (plan.resume_running) {
    const auto gone = std::count(plan.roster_nodes.begin(), plan.roster_nodes.end(), std::nullopt);
    const auto replayed =
        std::count_if(plan.steps.begin(), plan.steps.end(),
                      [](const ReplayStep& s) { return s.kind == ReplayStep::Kind::kRequest; });
    spdlog::info(
        "coordinating job {} ({} node(s) present; taking over its running round {}: {} of its "
        "{} node(s) gone, {} request(s) since revision {} replayed)",
        run_id_, nodes.size(), facts->round, gone, facts->roster.size(), replayed, facts->revision);
    resume_running(*facts, plan, nodes);
  } else {
    spdlog::info("coordinating job {} ({} node(s) present{})", run_id_, nodes.size(),
                 resume_round_ ? ", resuming at round " + std::to_string(*resume_round_) : "");
  }
  for (const ReplayStep& step : plan.steps) {
    if (stopped_) co_return Status::ok();
    switch (step.kind) {
      case ReplayStep::Kind::kJoin:
        on_node_put(nodes[step.index]);
        break;
      case ReplayStep::Kind::kRequest:
        on_request(requests[step.index]);
        break;
      case ReplayStep::Kind::kGone:
        on_participant_gone(facts->roster[step.index]);
        break;
    }
  }
  if (resume_round_ && !finished_ && !plan.resume_running) {
    deliver(registry_.complete_if_ready(run_id_, Clock::now()));
  }
  watch_ = etcd::Watch::start(
      io_.get_executor(), client_.options().endpoints,
      {.key = from,
       .range_end = to,
       .start_revision = present->revision + 1,
       .reconnect_for = client_.options().request_timeout,
       .attempt_timeout = client_.options().attempt_timeout,
       .transport = client_.options().transport},
      [this](std::vector<etcd::WatchEvent> events) { on_watch(std::move(events)); },
      [this](Status why) { fatal(why); });
  co_return Status::ok();
}

void EtcdCoordinator::on_watch(std::vector<etcd::WatchEvent> events) {
  for (auto& e : events) {
    if (stopped_) return;
    if (auto node = keys_.node_of(e.kv.key)) {
      if (e.deleted) {
        on_node_deleted(*node);
      } else if (e.kv.create_revision == e.kv.mod_revision) {
        on_node_put(e.kv);
      }
    } else if (!e.deleted && keys_.requester_of(e.kv.key)) {
      on_request(e.kv);
    }
  }
  check_drained();
}

void EtcdCoordinator::on_node_put(const etcd::KeyValue& kv) {
  auto node_key = keys_.node_of(kv.key);
  if (!node_key) return;
  const membership::NodeId id = static_cast<membership::NodeId>(kv.create_revision);
  auto decoded = membership::decode_request(kv.value);
  auto* join = decoded.state == membership::DecodeState::kComplete
                   ? std::get_if<membership::JoinRequest>(&decoded.message)
                   : nullptr;
  if (join == nullptr) {
    spdlog::warn(
        "{} does not hold a ddprun JOIN (another program's data under the prefix?); "
        "ignored",
        kv.key);
    return;
  }
  ids_[*node_key] = id;
  nodes_[id] = Node{*node_key, false};
  ++present_;
  if (finished_) return deliver({{id, *finished_}});
  join->run_id = run_id_;  // the prefix is the job's
  deliver(registry_.handle(id, std::move(*join), Clock::now()));
}

void EtcdCoordinator::on_node_deleted(const std::string& node_key) {
  auto it = ids_.find(node_key);
  if (it == ids_.end()) return;
  const membership::NodeId id = it->second;
  ids_.erase(it);
  if (auto n = nodes_.find(id); n != nodes_.end()) {
    nodes_.erase(n);
    --present_;
  }
  if (finished_) return;
  deliver(registry_.connection_closed(id, Clock::now(), kLeaseGone));
}

void EtcdCoordinator::resume_running(const JobState& state, const TakeoverPlan& plan,
                                     const std::vector<etcd::KeyValue>& nodes) {
  std::vector<std::pair<membership::NodeId, membership::NodeInfo>> participants;
  std::optional<membership::Config> config;
  for (std::size_t i = 0; i < state.roster.size(); ++i) {
    const RosterEntry& entry = state.roster[i];
    membership::NodeInfo info;
    info.node_key = entry.node_key;
    if (const auto& at = plan.roster_nodes[i]) {
      auto decoded = membership::decode_request(nodes[*at].value);
      if (auto* join = decoded.state == membership::DecodeState::kComplete
                           ? std::get_if<membership::JoinRequest>(&decoded.message)
                           : nullptr) {
        info = join->node;
        if (!config) config = join->config;
      }
      ids_[entry.node_key] = entry.id;
      nodes_[entry.id] = Node{entry.node_key, false};
      ++present_;
    }
    participants.emplace_back(entry.id, std::move(info));
  }
  if (!config) return;  // the recorded JOINs do not decode: a prefix holding other data
  registry_.resume_running(run_id_, *config, {state.round, state.restart_count, state.departures},
                           std::move(participants), Clock::now());
}

void EtcdCoordinator::on_participant_gone(const RosterEntry& entry) {
  if (finished_) return;
  deliver(registry_.connection_closed(entry.id, Clock::now(), kLeaseGone));
}

void EtcdCoordinator::on_request(const etcd::KeyValue& kv) {
  auto node_key = keys_.requester_of(kv.key);
  auto it = node_key ? ids_.find(*node_key) : ids_.end();
  if (it == ids_.end() || finished_) return;
  auto decoded = membership::decode_request(kv.value);
  if (decoded.state != membership::DecodeState::kComplete ||
      std::holds_alternative<membership::JoinRequest>(decoded.message)) {
    spdlog::warn("{} does not hold a ddprun request; ignored", kv.key);
    return;
  }
  deliver(registry_.handle(it->second, std::move(decoded.message), Clock::now()));
}

void EtcdCoordinator::arm_timer() {
  if (stopped_) return;
  auto next = registry_.next_deadline();
  if (!next) {
    timer_.cancel();
    return;
  }
  timer_.expires_at(*next);
  timer_.async_wait(life_.guard([this](const boost::system::error_code& ec) {
    if (!ec) deliver(registry_.on_deadline(Clock::now()));
  }));
}

}  // namespace ddp::rendezvous
