#include "agent/membership/native_backend.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "agent/membership/daemon_connect.h"

namespace ddp::agent {

namespace membership = rendezvous::membership;
using namespace std::chrono_literals;

NativeBackend::NativeBackend(boost::asio::io_context& io, const AgentConfig& config,
                             const RunSetup& setup, RdzvSettings rdzv)
    : io_(io),
      config_(config),
      setup_(setup),
      rdzv_(std::move(rdzv)),
      servers_(io, config, rdzv_, setup.group.run_id),
      rejoin_timer_(io),
      progress_(io, [this] {
        if (client_ && !closed_) client_->query_waiting();
      }) {}

NativeBackend::~NativeBackend() { close(); }

Status NativeBackend::start() { return servers_.start(); }

std::string NativeBackend::advertised_addr() const {
  return config_.local_addr.empty() ? setup_.hostname : config_.local_addr;
}

bool NativeBackend::retries_connecting() const { return rdzv_.node_rank && *rdzv_.node_rank != 0; }

void NativeBackend::join(RendezvousEvents& events) {
  events_ = &events;
  connect_deadline_ = std::chrono::steady_clock::now() + rdzv_.config.join_timeout;
  connect();
}

void NativeBackend::connect() {
  DaemonEndpoint e;
  e.host = servers_.daemon_host();
  e.port = rdzv_.port;
  e.attempt_timeout = rdzv_.connect_timeout;
  if (retries_connecting()) {
    e.retry_for = std::max(std::chrono::milliseconds(1),
                           std::chrono::duration_cast<std::chrono::milliseconds>(
                               connect_deadline_ - std::chrono::steady_clock::now()));
  } else if (!servers_.hosts_daemon()) {
    e.retry_for = rdzv_.connect_timeout;
  }
  connect_daemon(
      io_,
      {.on_event = [this](const membership::Payload& p) { on_event(p); },
       .on_disconnect =
           [this](const Status& s) {
             lost(Status(s.code(), "lost the rendezvous daemon: " + s.message()));
           }},
      e, [this](Result<std::shared_ptr<rendezvous::RdzvClient>> client) {
        if (closed_) {
          if (client) (*client)->close();
          return;
        }
        if (!client)
          return lost(Status(client.status().code(), unreachable_message(client.status())));
        client_ = std::move(client).value();
        if (rdzv_.secret) client_->use_secret(*rdzv_.secret);
        send_join();
      });
}

std::string NativeBackend::unreachable_message(const Status& s) const {
  if (!rdzv_.node_rank) {
    return s.message() +
           "; start the agent on the --rdzv-endpoint host (it hosts the "
           "rendezvous) or a ddp-rendezvous there, check the endpoint, or raise --rdzv-conf "
           "read_timeout";
  }
  return "node rank " + std::to_string(*rdzv_.node_rank) + ": " + s.message() +
         "; start the agent with --node-rank 0 on " + rdzv_.host +
         " (every node passes the same --master-addr and --master-port), or raise "
         "--rdzv-conf join_timeout";
}

void NativeBackend::send_join() {
  membership::JoinRequest request;
  request.run_id = setup_.group.run_id;
  request.config = rdzv_.config;
  request.node.addr = advertised_addr();
  request.node.node_key = advertised_addr() + ":" + std::to_string(::getpid());
  request.node.store_port = servers_.store_port();
  request.node.local_world_size = static_cast<std::uint32_t>(config_.nproc_per_node);
  request.node_rank = rdzv_.node_rank;
  client_->join(request, [this](Result<membership::Joined> joined) {
    if (closed_) return;
    if (!joined && retries_connecting() && joined.status().code() == ErrorCode::kJobFinished &&
        std::chrono::steady_clock::now() < connect_deadline_) {
      // Node rank 0 of the previous job on this port still lingers at its exit barrier
      // (back-to-back static jobs): wait for this job's node rank 0 to take the port.
      spdlog::info("{}:{} still serves a finished job; retrying", rdzv_.host, rdzv_.port);
      client_->close();
      client_.reset();
      rejoin_timer_.expires_after(100ms);  // a pause: nothing signals that daemon's exit
      rejoin_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec && !closed_) connect();
      });
      return;
    }
    if (!joined) {
      return lost(
          Status(joined.status().code(), "rendezvous refused: " + joined.status().message()));
    }
    spdlog::info("joined job {} for round {}{}", setup_.group.run_id, joined->round,
                 joined->waiting ? " (waiting: a round is running)" : "");
    if (!joined->waiting) progress_.start();
  });
}

void NativeBackend::on_event(const membership::Payload& payload) {
  if (closed_ || finished_) return;
  if (auto* w = std::get_if<membership::Waiting>(&payload)) {
    if (!first_round_seen_) JoinProgress::report(*w);
    return;
  }
  if (auto* r = std::get_if<membership::RoundComplete>(&payload)) return on_round(*r);
  if (auto* s = std::get_if<membership::StopWorkers>(&payload)) {
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

void NativeBackend::on_round(const membership::RoundComplete& r) {
  first_round_seen_ = true;
  progress_.stop();
  Round round = round_of(r);
  // Static backend: the workers' store is the daemon on --master-addr:--master-port.
  round.store_addr = rdzv_.node_rank ? rdzv_.host : r.store_addr;
  round.store_port = rdzv_.node_rank ? rdzv_.port : r.store_port;
  spdlog::info("round {}: group rank {} of {}, ranks {}..{} of {}, restart {}, worker store {}:{}",
               r.round, r.group_rank, r.group_world_size, r.rank_offset,
               r.rank_offset + r.local_world_size - 1, r.world_size, r.restart_count,
               round.store_addr, round.store_port);
  if (r.group_rank == 0) servers_.begin_store_round();
  events_->on_round(round);
}

void NativeBackend::report_success(std::uint64_t round) {
  spdlog::info("round {}: all local workers succeeded; waiting for the other nodes", round);
  if (client_) client_->report_success(round);
}

void NativeBackend::report_failure(std::uint64_t round, std::vector<membership::Failure> failures) {
  if (client_) client_->report_failure(round, std::move(failures));
}

void NativeBackend::workers_stopped(std::uint64_t round) {
  if (client_) client_->workers_stopped(round);
}

void NativeBackend::leave(const std::string& reason) {
  if (client_ && client_->is_open()) client_->leave(reason);
}

void NativeBackend::wait_finished(std::function<void()> done) {
  // A node's closed connection tells the host it got JobFinished (or is gone).
  if (client_ && servers_.hosts_daemon()) client_->close();
  servers_.when_drained(std::move(done));
}

void NativeBackend::lost(Status why) {
  if (closed_) return;
  progress_.stop();
  events_->on_lost(why);
}

void NativeBackend::close() {
  if (closed_) return;
  closed_ = true;
  rejoin_timer_.cancel();
  progress_.stop();
  if (client_ && client_->is_open()) client_->close();
  servers_.stop();
}

}  // namespace ddp::agent
