// The presence signal of an etcd job (docs/etcd.md, "Presence: the fast path for a lost
// node"): a second liveness signal beside the lease, for an agent process that died
// (SIGKILL, crash, OOM kill) and for a machine that lost power or its network. Every agent
// that does not coordinate keeps one TCP connection to the coordinating agent's presence
// listener (its address is in P/coordinator's value, presence_wire.h), and proves its hello
// with its token (P/presence/<node_key>, written with its JOIN):
//  - a hello whose token is not the one etcd holds for its node is refused at once (logged:
//    "refused the hello of node K: token mismatch ...") and never revokes anything;
//  - the coordinator loses an agent's connection (closed without a bye; or, with a silence
//    timeout, beats unacknowledged by the agent's machine for that long): if etcd still holds
//    the hello's token for that node and its node key still carries the lease named in the
//    hello, the coordinator revokes that lease, so the node key is deleted now and the usual
//    loss path runs (not TTL + up to 0.5 s later);
//  - an agent loses the coordinator's connection the same way: if P/coordinator still
//    carries that coordinator's lease, the agent revokes it, so the election and takeover
//    start now. Several agents may revoke the same lease: a second revoke changes nothing.
// A frozen (SIGSTOP) or stalled agent process keeps its connection open and its kernel keeps
// acknowledging: its lease decides as before. A connection closed on purpose (an agent that
// follows a new coordinator, or exits) says bye first. A link lost between two live agents
// that both still reach etcd (a partial partition) costs the agent at its far end its lease
// (and the coordinator's, when an agent sees the coordinator's end lost). Any failure here (no
// listener, an unreachable coordinator, a failed revoke) is logged once and loses only the
// fast path.
//
// Threading: the agent's io_context thread. stop() ends everything; no callback follows.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "agent/etcd_keys.h"
#include "agent/presence_link.h"
#include "agent/presence_records.h"
#include "agent/presence_server.h"
#include "etcd/client.h"

namespace ddp::agent {

class EtcdPresence {
 public:
  EtcdPresence(boost::asio::io_context& io, etcd::Client& client, const EtcdKeys& keys,
               std::string run_id, std::string node_key);
  ~EtcdPresence();
  EtcdPresence(const EtcdPresence&) = delete;
  EtcdPresence& operator=(const EtcdPresence&) = delete;

  // Draws this agent's token, and listens on `bind_host` ("" = every interface); the others
  // reach it at `advertised_host`. Without a token (getrandom refused) this agent sends no
  // hellos: its lease alone speaks for it.
  // `max_nodes`: the job's most nodes, which bounds the listener's connections.
  // `silence_timeout`: presence_timeout (0: closes only; silent machines are left to leases).
  void start(const std::string& bind_host, const std::string& advertised_host, int max_nodes,
             std::chrono::milliseconds silence_timeout);
  // Adds the put of this agent's token (P/presence/<node_key>, under its lease) to `join`'s
  // success branch, the txn that creates its node key. Nothing without a token.
  void add_token(etcd::Txn& join) const;
  // This agent's value for P/coordinator.
  std::string claim() const;
  // This agent's own lease, named in its hellos.
  void set_lease(std::int64_t lease) { lease_ = lease; }
  // This agent won the election: it follows nobody; closing connections now count.
  void coordinate();
  // P/coordinator as read or watched (a put): follow that coordinator unless it is this
  // agent or already followed.
  void follow(const etcd::KeyValue& coordinator);
  // P/coordinator was deleted: leave the followed coordinator with a bye.
  void unfollow();
  void stop();

 private:
  boost::asio::awaitable<Status> check_hello(PresenceHello hello);
  void on_agent_gone(const PresenceHello& hello, PeerEnd end);
  void on_coordinator_gone(std::string node_key, std::int64_t lease, PeerEnd end);
  std::string loss_text(PeerEnd end, const char* whose) const;
  void warn_once(const std::string& what);

  boost::asio::io_context& io_;
  etcd::Client& client_;
  const EtcdKeys& keys_;
  std::string run_id_;
  std::string node_key_;
  std::int64_t lease_ = 0;
  std::chrono::milliseconds silence_timeout_{0};
  std::string token_;  // empty: none drawn
  PresenceRecords records_;
  PresenceServer server_;
  std::optional<etcd::Endpoint> endpoint_;  // where the others reach this agent's listener
  std::shared_ptr<PresenceLink> link_;
  std::int64_t followed_lease_ = 0;
  bool coordinating_ = false;
  bool warned_ = false;
  bool stopped_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for coroutines in flight
};

}  // namespace ddp::agent
