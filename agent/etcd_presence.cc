#include "agent/etcd_presence.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// How long an agent tries to reach the coordinator's listener before it leaves the fast path.
constexpr auto kConnectDeadline = 2s;

}  // namespace

EtcdPresence::EtcdPresence(asio::io_context& io, etcd::Client& client, const EtcdKeys& keys,
                           std::string run_id, std::string node_key)
    : io_(io),
      client_(client),
      keys_(keys),
      run_id_(std::move(run_id)),
      node_key_(std::move(node_key)),
      server_(io, [this](const PresenceHello& hello) { on_agent_gone(hello); }) {}

EtcdPresence::~EtcdPresence() { stop(); }

void EtcdPresence::start(const std::string& bind_host, const std::string& advertised_host) {
  if (Status s = server_.listen(bind_host); !s) {
    return warn_once("no presence listener (" + s.message() + ")");
  }
  endpoint_ = etcd::Endpoint{advertised_host, server_.port()};
}

std::string EtcdPresence::claim() const { return encode_claim({node_key_, endpoint_}); }

void EtcdPresence::coordinate() {
  coordinating_ = true;
  unfollow();
}

void EtcdPresence::follow(const etcd::KeyValue& coordinator) {
  if (stopped_ || coordinating_ || coordinator.lease == 0) return;
  if (coordinator.lease == followed_lease_) return;
  auto claim = decode_claim(coordinator.value);
  if (claim.node_key == node_key_) return;
  unfollow();
  followed_lease_ = coordinator.lease;
  if (!claim.presence) return;  // a coordinator without a listener: its lease alone
  PresenceHello hello{run_id_, node_key_, lease_};
  link_ = PresenceLink::open(
      io_.get_executor(), *claim.presence, encode_hello(hello), kConnectDeadline,
      [this, key = claim.node_key, lease = coordinator.lease, alive = alive_] {
        if (*alive && !stopped_) on_coordinator_gone(key, lease);
      },
      [this, alive = alive_](Status why) {
        if (*alive && !stopped_) warn_once(why.message());
      });
}

void EtcdPresence::unfollow() {
  if (link_) link_->close();
  link_.reset();
  followed_lease_ = 0;
}

void EtcdPresence::on_agent_gone(const PresenceHello& hello) {
  if (!coordinating_ || stopped_) return;
  if (hello.run_id != run_id_) {
    return spdlog::warn("a presence connection of job '{}' (node {}) closed at job {}; ignored",
                        hello.run_id, hello.node_key, run_id_);
  }
  asio::co_spawn(
      io_,
      [this, hello, alive = alive_]() -> asio::awaitable<void> {
        // Only the lease that still carries that node's key: a node that already left (its
        // key gone) or joined again (another lease) is not touched.
        auto node = co_await client_.range(keys_.node(hello.node_key));
        if (!*alive || stopped_) co_return;
        if (!node)
          co_return warn_once("cannot read " + keys_.node(hello.node_key) + ": " +
                              node.status().message());
        if (node->kvs.empty() || node->kvs[0].lease != hello.lease) co_return;
        spdlog::info(
            "node {} is gone (its agent's presence connection closed): revoking its etcd lease "
            "so the job re-forms now",
            hello.node_key);
        Status s = co_await client_.revoke(hello.lease);
        if (!*alive || stopped_) co_return;
        if (!s && s.code() != ErrorCode::kNotFound) warn_once("revoke: " + s.message());
      },
      asio::detached);
}

void EtcdPresence::on_coordinator_gone(std::string node_key, std::int64_t lease) {
  link_.reset();
  asio::co_spawn(
      io_,
      [this, node_key, lease, alive = alive_]() -> asio::awaitable<void> {
        auto claim = co_await client_.range(keys_.coordinator());
        if (!*alive || stopped_) co_return;
        if (!claim)
          co_return warn_once("cannot read " + keys_.coordinator() + ": " +
                              claim.status().message());
        if (claim->kvs.empty() || claim->kvs[0].lease != lease) co_return;
        spdlog::info(
            "the coordinating agent (node {}) is gone (its presence connection closed): "
            "revoking its etcd lease so another agent takes over now",
            node_key);
        Status s = co_await client_.revoke(lease);
        if (!*alive || stopped_) co_return;
        if (!s && s.code() != ErrorCode::kNotFound) warn_once("revoke: " + s.message());
      },
      asio::detached);
}

void EtcdPresence::warn_once(const std::string& what) {
  if (warned_) return;
  warned_ = true;
  spdlog::warn(
      "presence: {}; node losses are noticed through etcd leases alone where this "
      "matters (slower, never wrong)",
      what);
}

void EtcdPresence::stop() {
  if (stopped_) return;
  unfollow();
  stopped_ = true;
  *alive_ = false;
  server_.stop();
}

}  // namespace ddp::agent
