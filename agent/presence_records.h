// What the coordinator reads from etcd to judge presence hellos and closes (presence_wire.h's
// PresenceRecord: the lease carrying P/nodes/<node_key> and the token in P/presence/<node_key>),
// batched: while one read txn is in flight, the requests that come meanwhile wait and go
// together in the next one (at most kMaxNodesPerTxn nodes, two ranges each: etcd's default
// limit of 128 operations per txn). A thousand agents saying hello at once cost a few dozen
// txns, not a thousand round trips; a lone hello costs one txn, as before.
//
// Errors: the txn's status, for every request it carried (kProtocol for a malformed answer);
// kCancelled after stop().
// Threading: the agent's io_context thread. stop() completes every waiting read; the object
// may then be destroyed while their coroutines finish.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "agent/etcd_keys.h"
#include "agent/presence_wire.h"
#include "common/status.h"
#include "etcd/client.h"

namespace ddp::agent {

class PresenceRecords {
 public:
  static constexpr std::size_t kMaxNodesPerTxn = 64;

  PresenceRecords(boost::asio::io_context& io, etcd::Client& client, const EtcdKeys& keys);
  ~PresenceRecords();
  PresenceRecords(const PresenceRecords&) = delete;
  PresenceRecords& operator=(const PresenceRecords&) = delete;

  // Both keys of `node_key`, read at one revision.
  boost::asio::awaitable<Result<PresenceRecord>> read(std::string node_key);
  void stop();

 private:
  struct Request {
    explicit Request(boost::asio::io_context& io, std::string key);
    std::string node_key;
    std::optional<Result<PresenceRecord>> result;
    boost::asio::steady_timer ready;  // cancelled once `result` is set
  };
  boost::asio::awaitable<void> drain();

  boost::asio::io_context& io_;
  etcd::Client& client_;
  const EtcdKeys& keys_;
  std::deque<std::shared_ptr<Request>> queue_;
  bool reading_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for coroutines in flight
};

}  // namespace ddp::agent
