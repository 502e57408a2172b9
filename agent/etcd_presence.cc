#include "agent/etcd_presence.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "rendezvous/auth/auth.h"

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
      records_(io, client, keys),
      server_(
          io, [this](const PresenceHello& hello) { return check_hello(hello); },
          [this](const PresenceHello& hello, PeerEnd end) { on_agent_gone(hello, end); }) {}

EtcdPresence::~EtcdPresence() { stop(); }

void EtcdPresence::start(const std::string& bind_host, const std::string& advertised_host,
                         int max_nodes, std::chrono::milliseconds silence_timeout) {
  silence_timeout_ = silence_timeout;
  auto token = rendezvous::auth::fresh_secret();
  if (token) {
    token_ = std::move(token).value();
  } else {
    warn_once("no presence token (" + token.status().message() + ")");
  }
  PresenceServer::Limits limits;
  limits.max_connections = 2 * static_cast<std::size_t>(std::max(max_nodes, 1)) + 16;
  limits.silence_timeout = silence_timeout;
  if (Status s = server_.listen(bind_host, limits); !s) {
    return warn_once("no presence listener (" + s.message() + ")");
  }
  endpoint_ = etcd::Endpoint{advertised_host, server_.port()};
}

void EtcdPresence::add_token(etcd::Txn& join) const {
  if (!token_.empty())
    join.success.push_back(etcd::op_put(keys_.presence(node_key_), token_, lease_));
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
  // A coordinator without a listener, or this agent without a token: the lease alone.
  if (!claim.presence || token_.empty()) return;
  PresenceHello hello{run_id_, node_key_, lease_, token_};
  link_ = PresenceLink::open(
      io_.get_executor(), *claim.presence, encode_hello(hello),
      {.connect_deadline = kConnectDeadline, .silence_timeout = silence_timeout_},
      [this, key = claim.node_key, lease = coordinator.lease, alive = alive_](PeerEnd end) {
        if (*alive && !stopped_) on_coordinator_gone(key, lease, end);
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

asio::awaitable<Status> EtcdPresence::check_hello(PresenceHello hello) {
  auto alive = alive_;
  if (hello.run_id != run_id_) {
    co_return unauthenticated("it names job '" + hello.run_id + "', this is job '" + run_id_ + "'");
  }
  auto record = co_await records_.read(hello.node_key);
  if (!*alive || stopped_) co_return Status::ok();
  // Unreadable now: accepted; its close is judged against etcd all the same.
  if (!record) co_return Status::ok();
  if (token_mismatch(hello, *record)) {
    co_return unauthenticated("token mismatch (etcd holds another token in " +
                              keys_.presence(hello.node_key) +
                              "): a forged or stale hello, which revokes nothing");
  }
  co_return Status::ok();
}

// How a lost connection reads in the log: "node K is gone (<this>)".
std::string EtcdPresence::loss_text(PeerEnd end, const char* whose) const {
  if (end == PeerEnd::kUnreachable) {
    return fmt::format(
        "{} machine stopped acknowledging its presence connection for {:.3g} s, or lost its "
        "route: powered off or cut off",
        whose, std::chrono::duration<double>(silence_timeout_).count());
  }
  return fmt::format("{} presence connection closed", whose);
}

void EtcdPresence::on_agent_gone(const PresenceHello& hello, PeerEnd end) {
  if (!coordinating_ || stopped_) return;
  asio::co_spawn(
      io_,
      [this, hello, end, alive = alive_]() -> asio::awaitable<void> {
        // Only the lease that still carries that node's key, and only for the hello of the
        // agent that wrote that node's token: a node that already left (its key gone) or
        // joined again (another lease), or a hello not its own, is not touched.
        auto record = co_await records_.read(hello.node_key);
        if (!*alive || stopped_) co_return;
        if (!record)
          co_return warn_once("cannot read " + keys_.presence(hello.node_key) + ": " +
                              record.status().message());
        if (token_mismatch(hello, *record)) {
          co_return spdlog::warn(
              "presence: a connection naming node {} closed, but its token is not the one in "
              "etcd (token mismatch); nothing revoked",
              hello.node_key);
        }
        if (!revokes_on_close(hello, *record)) co_return;
        spdlog::info("node {} is gone ({}): revoking its etcd lease so the job re-forms now",
                     hello.node_key,
                     loss_text(end, end == PeerEnd::kClosed ? "its agent's" : "its"));
        Status s = co_await client_.revoke(hello.lease);
        if (!*alive || stopped_) co_return;
        if (!s && s.code() != ErrorCode::kNotFound) warn_once("revoke: " + s.message());
      },
      asio::detached);
}

void EtcdPresence::on_coordinator_gone(std::string node_key, std::int64_t lease, PeerEnd end) {
  link_.reset();
  asio::co_spawn(
      io_,
      [this, node_key, lease, end, alive = alive_]() -> asio::awaitable<void> {
        auto claim = co_await client_.range(keys_.coordinator());
        if (!*alive || stopped_) co_return;
        if (!claim)
          co_return warn_once("cannot read " + keys_.coordinator() + ": " +
                              claim.status().message());
        if (claim->kvs.empty() || claim->kvs[0].lease != lease) co_return;
        spdlog::info(
            "the coordinating agent (node {}) is gone ({}): revoking its etcd lease so another "
            "agent takes over now",
            node_key, loss_text(end, "its"));
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
  records_.stop();
}

}  // namespace ddp::agent
