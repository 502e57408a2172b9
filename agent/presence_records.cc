#include "agent/presence_records.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>
#include <vector>

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

}  // namespace

PresenceRecords::Request::Request(asio::io_context& io, std::string key)
    : node_key(std::move(key)), ready(io, asio::steady_timer::time_point::max()) {}

PresenceRecords::PresenceRecords(asio::io_context& io, etcd::Client& client, const EtcdKeys& keys)
    : io_(io), client_(client), keys_(keys) {}

PresenceRecords::~PresenceRecords() { stop(); }

asio::awaitable<Result<PresenceRecord>> PresenceRecords::read(std::string node_key) {
  auto request = std::make_shared<Request>(io_, std::move(node_key));
  if (!*alive_) co_return cancelled("presence records: stopped");
  queue_.push_back(request);
  if (!reading_) {
    reading_ = true;
    asio::co_spawn(io_, drain(), asio::detached);
  }
  if (!request->result) co_await request->ready.async_wait(kTuple);
  if (!request->result) co_return cancelled("presence records: stopped");
  co_return std::move(*request->result);
}

asio::awaitable<void> PresenceRecords::drain() {
  auto alive = alive_;
  while (*alive && !queue_.empty()) {
    const std::size_t n = std::min(queue_.size(), kMaxNodesPerTxn);
    std::vector<std::shared_ptr<Request>> batch(queue_.begin(), queue_.begin() + n);
    queue_.erase(queue_.begin(), queue_.begin() + n);
    etcd::Txn txn;  // no compare: the success branch, every key at one revision
    for (const auto& r : batch) {
      txn.success.push_back(etcd::op_range(keys_.node(r->node_key)));
      txn.success.push_back(etcd::op_range(keys_.presence(r->node_key)));
    }
    auto answer = co_await client_.txn(std::move(txn));
    if (!*alive) {  // stopped meanwhile: its waiters end with kCancelled
      for (auto& r : batch) r->ready.cancel();
      co_return;
    }
    Status failed = Status::ok();  // stays ok: every request gets its record
    if (!answer) {
      failed = answer.status();
    } else if (answer->ranges.size() != 2 * n) {
      failed = protocol_error("etcd answered a txn of " + std::to_string(2 * n) + " ranges with " +
                              std::to_string(answer->ranges.size()));
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!failed) {
        batch[i]->result = failed;
      } else {
        PresenceRecord record;
        const auto& nodes = answer->ranges[2 * i].kvs;
        const auto& tokens = answer->ranges[2 * i + 1].kvs;
        if (!nodes.empty()) record.node_lease = nodes[0].lease;
        if (!tokens.empty()) record.token = tokens[0].value;
        batch[i]->result = std::move(record);
      }
      batch[i]->ready.cancel();
    }
  }
  reading_ = false;
}

void PresenceRecords::stop() {
  if (!*alive_) return;
  *alive_ = false;
  for (auto& r : queue_) r->ready.cancel();
  queue_.clear();
  reading_ = false;
}

}  // namespace ddp::agent
