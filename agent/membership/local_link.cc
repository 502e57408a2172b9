#include "agent/membership/local_link.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "agent/membership/host_listen.h"

namespace ddp::agent {

namespace membership = rendezvous::membership;

Result<std::unique_ptr<LocalLink>> LocalLink::start(boost::asio::io_context& io,
                                                    const AgentConfig& config,
                                                    const RunSetup& setup) {
  rendezvous::ServerOptions options;
  options.connections = config.connection_limits;
  options.host = store_bind_host(setup.group.master_addr);
  options.port = config.master_port_given ? config.master_port : 0;
  auto store = rendezvous::Server::start(io, options);
  if (!store) return store.status();
  membership::Config job = config.job;
  // The node is this process: its heartbeat budget never runs out.
  job.keep_alive_interval = membership::kMaxTimeout;
  job.keep_alive_max_attempt = 1;
  membership::JoinRequest join = node_join(config, setup, job, (*store)->port());
  join.node.addr = options.host.empty() ? "127.0.0.1" : options.host;  // the workers' MASTER_ADDR
  return std::make_unique<LocalLink>(io, std::move(store).value(), std::move(join));
}

LocalLink::LocalLink(boost::asio::io_context& io, std::unique_ptr<rendezvous::Server> store,
                     membership::JoinRequest join)
    : io_(io), store_(std::move(store)), join_(std::move(join)), deadline_(io) {}

LocalLink::~LocalLink() { close(); }

void LocalLink::open(LinkEvents& events) {
  events_ = &events;
  send(join_);
}

void LocalLink::send(const membership::Request& request) {
  if (closed_) return;
  deliver(registry_.handle(kNode, request, membership::Clock::now()));
}

void LocalLink::deliver(membership::Events events) {
  deadline_.cancel();
  if (auto at = registry_.next_deadline()) {
    deadline_.expires_at(*at);
    deadline_.async_wait(life_.guard([this](const boost::system::error_code& ec) {
      if (!ec) deliver(registry_.on_deadline(membership::Clock::now()));
    }));
  }
  if (events.empty()) return;
  boost::asio::post(io_, life_.guard([this, events = std::move(events)] {
    for (const membership::Event& e : events) {
      if (closed_) return;
      if (std::holds_alternative<membership::StopWorkers>(e.payload)) continue;
      if (auto* r = std::get_if<membership::RoundComplete>(&e.payload); r && r->round > 1) {
        spdlog::info("restarting the worker group (restart {} of {})", r->restart_count,
                     join_.config.max_restarts);
      }
      events_->on_payload(e.payload);
    }
  }));
}

void LocalLink::wait_finished(std::function<void()> done) {
  boost::asio::post(io_, life_.guard(std::move(done)));
}

void LocalLink::close() {
  if (closed_) return;
  closed_ = true;
  life_.end();
  deadline_.cancel();
  store_->stop();
}

}  // namespace ddp::agent
