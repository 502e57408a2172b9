#include "agent/membership/node_servers.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "agent/membership/host_listen.h"
#include "rendezvous/auth/auth.h"

namespace ddp::agent {

NodeServers::NodeServers(boost::asio::io_context& io, const AgentConfig& config,
                         const RdzvSettings& rdzv, std::string run_id)
    : io_(io), config_(config), rdzv_(rdzv), run_id_(std::move(run_id)) {}

Status NodeServers::start() {
  if (Status s = rdzv_.node_rank ? start_static_daemon() : start_daemon(); !s) return s;
  if (Status s = start_status(); !s) return s;
  if (rdzv_.node_rank) {  // static: no worker store of its own; the daemon is the store
    store_port_ = daemon_ ? daemon_->port() : 0;
    return Status::ok();
  }
  return start_store();
}

rendezvous::ServerOptions NodeServers::server_base() const {
  rendezvous::ServerOptions options;
  options.connections = config_.connection_limits;
  return options;
}

rendezvous::ServerOptions NodeServers::daemon_base() const {
  rendezvous::ServerOptions options = server_base();
  // The hosted daemon knows its own job's key from the start: no trust on first use.
  if (rdzv_.secret) {
    options.auth.pinned.push_back({run_id_, rendezvous::auth::job_key(*rdzv_.secret, run_id_)});
  }
  if (rdzv_.resume) options.registry.resume[run_id_] = *rdzv_.resume;
  return options;
}

Status NodeServers::start_daemon() {
  if (rdzv_.is_host == false) return Status::ok();
  auto server = listen_as_host(io_, rdzv_.host, rdzv_.port, daemon_base());
  if (!server) {
    if (rdzv_.is_host == true) {
      return Status(server.status().code(),
                    "--rdzv-conf is_host=true but the rendezvous cannot listen on " + rdzv_.host +
                        ":" + std::to_string(rdzv_.port) + ": " + server.status().message());
    }
    spdlog::info("rendezvous endpoint {}:{} is not bindable here: joining it as a client",
                 rdzv_.host, rdzv_.port);
    return Status::ok();
  }
  daemon_ = std::move(server).value();
  // Port 0: an etcd candidate's daemon; the etcd link names the one elected.
  if (rdzv_.port != 0) {
    spdlog::info("hosting the rendezvous for job {} on {}:{}", run_id_, rdzv_.host,
                 daemon_->port());
  }
  return Status::ok();
}

Status NodeServers::start_static_daemon() {
  if (*rdzv_.node_rank != 0) return Status::ok();
  const std::string& addr = rdzv_.host;
  const std::uint16_t port = rdzv_.port;
  auto taken = [&] {
    return io_error("port " + std::to_string(port) + " on " + addr +
                    " is taken (another program, or another agent with --node-rank 0); stop the "
                    "process holding it, or pass a free --master-port (the same on every node)");
  };
  auto server = listen_as_host(io_, addr, port, daemon_base());
  if (server) {
    daemon_ = std::move(server).value();
  } else if (server.status().code() == ErrorCode::kAddressInUse) {
    return taken();
  } else {
    // Not this machine's address (or not resolvable here): every interface, same port.
    rendezvous::ServerOptions options = daemon_base();
    options.port = port;
    auto any = rendezvous::Server::start(io_, options);
    if (!any && any.status().code() == ErrorCode::kAddressInUse) return taken();
    if (!any) {
      return io_error("node rank 0 cannot listen on --master-addr " + addr + " port " +
                      std::to_string(port) + " (" + server.status().message() + ") nor on port " +
                      std::to_string(port) + " of every interface (" + any.status().message() +
                      "); run node rank 0 on the machine " + addr + " names");
    }
    spdlog::warn(
        "--master-addr {} is not an address of this machine ({}); listening on port {} of every "
        "interface: the other nodes must reach this machine at {}",
        addr, server.status().message(), port, addr);
    daemon_ = std::move(any).value();
    daemon_connect_host_ = "127.0.0.1";
  }
  spdlog::info("node rank 0: hosting the rendezvous and the worker store for job {} on {}:{}",
               run_id_, rdzv_.host, daemon_->port());
  return Status::ok();
}

Status NodeServers::start_status() {
  if (!config_.status_port) return Status::ok();
  if (daemon_ == nullptr) {
    spdlog::info("--status-port {} ignored: this node does not host the rendezvous",
                 *config_.status_port);
    return Status::ok();
  }
  rendezvous::status::StatusOptions options;
  options.host = daemon_->host();  // the daemon's own bind address: the same interfaces
  if (options.host == "::" || options.host == "0.0.0.0") options.host.clear();
  options.port = *config_.status_port;
  auto status = rendezvous::status::StatusServer::start(io_, *daemon_, options);
  if (!status) {
    return Status(status.status().code(),
                  "cannot serve the rendezvous status: " + status.status().message());
  }
  status_ = std::move(status).value();
  return Status::ok();
}

Status NodeServers::start_store() {
  rendezvous::ServerOptions options = server_base();
  // The address this node advertises is the MASTER_ADDR its workers get when it is group rank 0.
  options.host = store_bind_host(config_.local_addr);
  options.port = config_.master_port_given ? config_.master_port : 0;
  auto store = rendezvous::Server::start(io_, options);
  if (!store) {
    return Status(store.status().code(),
                  "cannot start the worker store: " + store.status().message());
  }
  store_ = std::move(store).value();
  store_port_ = store_->port();
  return Status::ok();
}

std::string NodeServers::daemon_host() const {
  return daemon_connect_host_.empty() ? rdzv_.host : daemon_connect_host_;
}

void NodeServers::when_drained(std::function<void()> done) {
  if (daemon_ == nullptr) {
    boost::asio::post(io_, std::move(done));
    return;
  }
  daemon_->when_job_drained(run_id_, std::move(done));
}

void NodeServers::stop() {
  if (status_) status_->stop();
  if (store_) store_->stop();
  if (daemon_) daemon_->stop();
}

}  // namespace ddp::agent
