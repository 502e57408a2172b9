// What one node of a multi-node job serves (c10d, static, and each etcd candidate's NativeLink):
//  - the rendezvous daemon, when this node is the endpoint host (and its status port, with
//    --status-port, bound like the daemon): c10d is_host=true demands it,
//    is_host unset tries to bind the endpoint (torchrun's inference: it fails when another agent
//    or daemon has it or the address is not this machine's), is_host=false never hosts; with
//    the static backend node rank 0 hosts it on --master-addr:--master-port, and it is the
//    workers' store too (held to the end of the job, as torchrun's static rendezvous gives it
//    to the workers); when that address is not this machine's (a NAT or service address), on
//    that port of every interface, saying so; a taken port is named with the fix;
//  - with etcd, a daemon of every agent that seeks the host (is_host=true, port 0, resumed at
//    rdzv.resume): the election's winner keeps it and serves the job, a loser closes it
//    (etcd_link.h);
//  - the workers' store (c10d and etcd): every node holds a store port for the whole job (etcd:
//    for as long as its link to the host), and the round's group-rank-0 node's store is the one
//    every worker uses.
// The workers' store a group-rank-0 node serves (its own, or with static the daemon) is
// emptied for every round after its first by the membership backend (membership_backend.h).
//
// Threading: the agent's io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "agent/config.h"
#include "agent/membership/rdzv_settings.h"
#include "common/status.h"
#include "rendezvous/server.h"
#include "rendezvous/status/status_server.h"

namespace ddp::agent {

class NodeServers {
 public:
  NodeServers(boost::asio::io_context& io, const AgentConfig& config, const RdzvSettings& rdzv,
              std::string run_id);

  // Starts the daemon (if this node hosts it) and the workers' store. Errors name the
  // endpoint or port and the fix (kIo, kAddressInUse, kInvalidArgument).
  Status start();
  bool hosts_daemon() const { return daemon_ != nullptr; }
  // Where this node's own rendezvous client reaches the daemon.
  std::string daemon_host() const;
  std::uint16_t daemon_port() const { return daemon_ ? daemon_->port() : rdzv_.port; }
  // The job as the hosted daemon has it; null when this node hosts none (or before a JOIN).
  const rendezvous::membership::Job* hosted_job() const {
    return daemon_ ? daemon_->registry().find(run_id_) : nullptr;
  }
  // The port this node advertises for its workers' store (static: the daemon's, or 0).
  std::uint16_t store_port() const { return store_port_; }
  // The workers' store this node serves as a round's group rank 0 (static: the daemon on
  // node rank 0); null when it serves none.
  rendezvous::Server* worker_store() { return store_ ? store_.get() : daemon_.get(); }
  // The hosted daemon's job `run_id` has finished and every other connection to it closed;
  // at once when this node hosts no daemon.
  void when_drained(std::function<void()> done);
  void stop();

 private:
  // The options of every server this node hosts but its address: the connection limits, and for
  // the rendezvous daemon the job's key pinned when it has a secret.
  rendezvous::ServerOptions server_base() const;
  rendezvous::ServerOptions daemon_base() const;
  Status start_daemon();
  Status start_static_daemon();
  Status start_store();

  boost::asio::io_context& io_;
  const AgentConfig& config_;
  const RdzvSettings& rdzv_;
  std::string run_id_;
  Status start_status();

  std::unique_ptr<rendezvous::Server> daemon_;
  std::unique_ptr<rendezvous::status::StatusServer> status_;  // --status-port, on daemon_
  std::string daemon_connect_host_;  // static node rank 0: where its own client connects
  std::unique_ptr<rendezvous::Server> store_;
  std::uint16_t store_port_ = 0;
};

}  // namespace ddp::agent
