#include "agent/membership/native_link.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace ddp::agent {

namespace membership = rendezvous::membership;
using namespace std::chrono_literals;
using std::chrono::milliseconds;

Result<std::unique_ptr<NativeLink>> NativeLink::start(boost::asio::io_context& io,
                                                      const AgentConfig& config,
                                                      const RunSetup& setup, RdzvSettings rdzv) {
  auto link = std::make_unique<NativeLink>(io, config, setup, std::move(rdzv));
  if (Status s = link->servers_.start(); !s) return s;
  return link;
}

NativeLink::NativeLink(boost::asio::io_context& io, const AgentConfig& config,
                       const RunSetup& setup, RdzvSettings rdzv)
    : io_(io),
      config_(config),
      setup_(setup),
      rdzv_(std::move(rdzv)),
      servers_(io, config, rdzv_, setup.group.run_id),
      retry_timer_(io) {}

NativeLink::~NativeLink() { close(); }

bool NativeLink::retries_connecting() const { return rdzv_.node_rank && *rdzv_.node_rank != 0; }

void NativeLink::open(LinkEvents& events) {
  events_ = &events;
  if (retries_connecting()) {
    retry_for_ = std::chrono::duration_cast<milliseconds>(rdzv_.config.join_timeout);
  } else if (!servers_.hosts_daemon()) {
    retry_for_ = rdzv_.connect_timeout;
  }
  connect_deadline_ = Clock::now() + retry_for_;
  connect();
}

void NativeLink::connect() {
  const auto left = std::chrono::duration_cast<milliseconds>(connect_deadline_ - Clock::now());
  const milliseconds timeout = retry_for_.count() == 0
                                   ? rdzv_.connect_timeout
                                   : std::clamp(left, milliseconds(1), rdzv_.connect_timeout);
  auto client = rendezvous::RdzvClient::create(
      io_, {.on_event = life_.guard([this](const membership::Payload& p) { on_push(p); }),
            .on_disconnect = life_.guard([this](const Status& s) {
              // No client_: a join that ended with its connection is retried (send_join).
              if (client_) lost(Status(s.code(), "lost the rendezvous daemon: " + s.message()));
            })});
  client->connect(servers_.daemon_host(), servers_.daemon_port(), timeout,
                  [this, client, alive = life_.watch()](Status s) {
                    if (!alive) return client->close();
                    if (!s) {
                      closed_unanswered_ = false;
                      return connect_failed(std::move(s));
                    }
                    client_ = client;
                    if (rdzv_.secret) client_->use_secret(*rdzv_.secret);
                    send_join();
                  });
}

void NativeLink::connect_failed(Status s) {
  // The problem part of a "problem; fix" message: the fix a lower layer suggests (e.g. "check
  // --rdzv-endpoint") may not be the option this user passed, so the message names its own.
  const std::string problem = s.message().substr(0, s.message().find("; "));
  const std::string where = servers_.daemon_host() + ":" + std::to_string(rdzv_.port);
  if (retry_for_.count() == 0) return lost(Status(s.code(), unreachable_message(s.message())));
  if (Clock::now() + pause_ >= connect_deadline_) {
    if (closed_unanswered_) {
      return lost(Status(
          ErrorCode::kTimeout,
          where + " accepted every connection for " + std::to_string(retry_for_.count()) +
              "ms but closed each rendezvous request unanswered: it is not a ddprun rendezvous "
              "(a torchrun agent or another TCPStore server?); stop it and start ddprun there, "
              "or point --rdzv-endpoint at a ddprun agent or ddp-rendezvous"));
    }
    return lost(Status(ErrorCode::kTimeout,
                       unreachable_message("cannot reach the rendezvous at " + where + " for " +
                                           std::to_string(retry_for_.count()) +
                                           "ms (last attempt: " + problem + ")")));
  }
  if (!announced_) {
    announced_ = true;
    spdlog::info("the rendezvous at {} is not reachable yet ({}); retrying for up to {}ms", where,
                 problem, retry_for_.count());
  }
  retry_after(pause_);  // nothing signals that a remote port started listening
  pause_ = std::min(pause_ * 2, milliseconds(1000));
}

void NativeLink::retry_after(milliseconds pause) {
  retry_timer_.expires_after(pause);
  retry_timer_.async_wait(life_.guard([this](const boost::system::error_code& ec) {
    if (!ec) connect();
  }));
}

std::string NativeLink::unreachable_message(const std::string& problem) const {
  if (!rdzv_.node_rank) {
    return problem +
           "; start the agent on the --rdzv-endpoint host (it hosts the "
           "rendezvous) or a ddp-rendezvous there, check the endpoint, or raise --rdzv-conf "
           "read_timeout";
  }
  return "node rank " + std::to_string(*rdzv_.node_rank) + ": " + problem +
         "; start the agent with --node-rank 0 on " + rdzv_.host +
         " (every node passes the same --master-addr and --master-port), or raise "
         "--rdzv-conf join_timeout";
}

void NativeLink::send_join() {
  membership::JoinRequest request = node_join(config_, setup_, rdzv_.config, servers_.store_port());
  request.node_rank = rdzv_.node_rank;
  client_->join(request, life_.guard([this](Result<membership::Joined> joined) {
    const ErrorCode code = joined ? ErrorCode::kOk : joined.status().code();
    if (code == ErrorCode::kPeerGone && retry_for_.count() > 0) {
      // The daemon closed before answering: it is exiting (a static job's previous node rank
      // 0, or an etcd host just killed that still holds P/host). Like a refused connection:
      // retry until the deadline (an etcd node meanwhile hears P/host change).
      client_->close();
      client_.reset();
      closed_unanswered_ = true;
      return connect_failed(joined.status());
    }
    if (code == ErrorCode::kJobFinished && retries_connecting() &&
        Clock::now() < connect_deadline_) {
      // Node rank 0 of the previous job on this port still lingers at its exit barrier
      // (back-to-back static jobs): wait for this job's node rank 0 to take the port.
      spdlog::info("{}:{} still serves a finished job; retrying", rdzv_.host, rdzv_.port);
      client_->close();
      client_.reset();
      return retry_after(100ms);  // a pause: nothing signals that daemon's exit
    }
    if (!joined) {
      return lost(
          Status(joined.status().code(), "rendezvous refused: " + joined.status().message()));
    }
    spdlog::info("joined job {} for round {}{}", setup_.group.run_id, joined->round,
                 joined->waiting ? " (waiting: a round is running)" : "");
    events_->on_payload(*joined);
  }));
}

void NativeLink::on_push(membership::Payload payload) {
  if (auto* r = std::get_if<membership::RoundComplete>(&payload); r && rdzv_.node_rank) {
    // Static backend: the workers' store is the daemon on --master-addr:--master-port.
    r->store_addr = rdzv_.host;
    r->store_port = rdzv_.port;
  }
  events_->on_payload(payload);
}

void NativeLink::send(const membership::Request& request) {
  // JOIN is open()'s; heartbeats are the client's own.
  if (client_ && client_->is_open()) client_->send_request(request);
}

void NativeLink::wait_finished(std::function<void()> done) {
  // A node's closed connection tells the host it got JobFinished (or is gone).
  if (client_ && servers_.hosts_daemon()) client_->close();
  servers_.when_drained(std::move(done));
}

void NativeLink::lost(Status why) {
  if (!closed_) events_->on_link_lost(why);
}

void NativeLink::close() {
  if (closed_) return;
  closed_ = true;
  life_.end();
  retry_timer_.cancel();
  if (client_ && client_->is_open()) client_->close();
  servers_.stop();
}

}  // namespace ddp::agent
