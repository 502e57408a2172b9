#include "agent/membership/etcd_link.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>

#include "rendezvous/membership/wire.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
namespace membership = rendezvous::membership;
using namespace std::chrono_literals;

etcd::ClientOptions call_options(const EtcdSettings& s) {
  // The first calls wait for etcd for read_timeout, but never past the join timeout.
  auto budget =
      std::min<std::chrono::milliseconds>(s.rdzv.connect_timeout, s.rdzv.config.join_timeout);
  return {.endpoints = s.endpoints,
          .request_timeout = std::max<std::chrono::milliseconds>(budget, 1s),
          .attempt_timeout = 2s,
          .transport = etcd_transport(s)};
}

etcd::ClientOptions keep_alive_options(const EtcdSettings& s) {
  return etcd::Session::keep_alive_options(
      {.endpoints = s.endpoints, .transport = etcd_transport(s)}, s.lease_ttl);
}

// One blocking call on a private io_context: for the last words, when no loop runs.
Result<etcd::Json> call_last(const EtcdSettings& s, std::chrono::milliseconds timeout,
                             const std::string& path, const etcd::Json& body) {
  etcd::ClientOptions last = keep_alive_options(s);
  last.request_timeout = timeout;
  return etcd::call_blocking(last, path, body);
}

Result<etcd::Json> revoke_blocking(const EtcdSettings& s, std::chrono::milliseconds timeout,
                                   std::int64_t lease) {
  return call_last(s, timeout, "/v3/lease/revoke", etcd::Json{{"ID", std::to_string(lease)}});
}

std::string finished_text(const membership::JobFinished& f) {
  return "exit code " + std::to_string(f.exit_code) + (f.reason.empty() ? "" : ": " + f.reason);
}

}  // namespace

proc::DeathWatch::LastWords lease_revoker(const EtcdSettings& settings) {
  return [settings](const std::string& note) {
    std::int64_t lease = 0;
    auto [end, ec] = std::from_chars(note.data(), note.data() + note.size(), lease);
    if (ec == std::errc() && end == note.data() + note.size() && lease != 0) {
      (void)revoke_blocking(settings, 2s, lease);
    }
  };
}

Result<std::unique_ptr<EtcdLink>> EtcdLink::start(asio::io_context& io, const AgentConfig& config,
                                                  const RunSetup& setup, EtcdSettings settings,
                                                  proc::DeathWatch* death_watch) {
  auto link = std::make_unique<EtcdLink>(io, config, setup, std::move(settings), death_watch);
  if (Status s = link->servers_.start(); !s) return s;
  return link;
}

EtcdLink::EtcdLink(asio::io_context& io, const AgentConfig& config, const RunSetup& setup,
                   EtcdSettings settings, proc::DeathWatch* death_watch)
    : io_(io),
      setup_(setup),
      settings_(std::move(settings)),
      keys_(settings_.prefix, setup.group.run_id),
      join_(node_join(config, setup, settings_.rdzv.config, 0)),
      servers_(io, config, settings_.rdzv, setup.group.run_id),
      client_(io.get_executor(), call_options(settings_)),
      death_watch_(death_watch) {}

EtcdLink::~EtcdLink() {
  close();
  if (lease_ == 0) return;
  // After a lost etcd, a short try: the exit must not wait on an unreachable etcd.
  const auto timeout = lost_ ? 300ms : 2s;
  if (leave_reason_) {
    auto key = keys_.request(join_.node.node_key, ++request_seq_);
    (void)call_last(
        settings_, timeout, "/v3/kv/put",
        etcd::op_put(key, membership::encode_request(membership::Leave{*leave_reason_}), lease_)
            .at("request_put"));
  }
  // Revoking deletes this node's keys at once: the others hear it left now, not at expiry.
  (void)revoke_blocking(settings_, timeout, lease_);
  // Tried: the death watch is not to try again after this process exits.
  if (death_watch_) death_watch_->clear_last_words();
}

void EtcdLink::open(LinkEvents& events) {
  events_ = &events;
  asio::co_spawn(io_, run_join(), asio::detached);
}

asio::awaitable<void> EtcdLink::run_join() {
  auto alive = life_.watch();
  const std::string where = etcd::join_endpoints(settings_.endpoints);
  auto session = co_await etcd::Session::open(client_, keep_alive_options(settings_),
                                              settings_.lease_ttl, [this](Status s) { lost(s); });
  if (!alive || closed_) co_return;
  if (!session) {
    lost(Status(session.status().code(),
                session.status().message() +
                    "; start etcd (>= 3.4) there, check --rdzv-endpoint, or raise --rdzv-conf "
                    "read_timeout"));
    co_return;
  }
  session_ = std::move(*session);
  lease_ = session_->lease();
  if (session_->ttl() > settings_.lease_ttl) {
    spdlog::warn(
        "etcd granted a lease of {} s for lease_ttl={}: its smallest (1.5 x its election "
        "timeout, rounded up); a lost node is noticed after {} s",
        session_->ttl().count(), settings_.lease_ttl.count(), session_->ttl().count());
  }
  // From here a death of this agent without its own revoke is revoked by the death watch.
  if (death_watch_) death_watch_->set_last_words(std::to_string(lease_));

  auto finished = co_await client_.range(keys_.finished());
  if (!alive || closed_) co_return;
  if (!finished) co_return lost(finished.status());
  if (!finished->kvs.empty()) {
    auto decoded = membership::decode_push(finished->kvs[0].value);
    auto* f = decoded.state == membership::DecodeState::kComplete
                  ? std::get_if<membership::JobFinished>(&decoded.message)
                  : nullptr;
    co_return lost(job_finished(
        "job '" + setup_.group.run_id + "' finished (" +
        (f ? finished_text(*f) : std::string("its record is not ddprun's")) +
        "); start a new job with a different --rdzv-id (etcd keeps " + keys_.finished() + ")"));
  }
  // Read, then watch from the next revision: this node's events, and the coordinator key.
  const std::string inbox = keys_.events(join_.node.node_key);
  auto mine = co_await client_.range(inbox, etcd::prefix_end(inbox));
  if (!alive || closed_) co_return;
  if (!mine) co_return lost(mine.status());
  const auto reconnect = std::chrono::duration_cast<std::chrono::milliseconds>(settings_.lease_ttl);
  auto lost_etcd =
      life_.guard([this](Status why) { lost(Status(why.code(), "lost etcd: " + why.message())); });
  event_watch_ = etcd::Watch::start(
      io_.get_executor(), settings_.endpoints,
      {.key = inbox,
       .range_end = etcd::prefix_end(inbox),
       .start_revision = mine->revision + 1,
       .reconnect_for = reconnect,
       .attempt_timeout = 2s,
       .transport = etcd_transport(settings_)},
      life_.guard([this](std::vector<etcd::WatchEvent> events) { on_events(events); }), lost_etcd);
  election_.emplace(client_, keys_.coordinator(), join_.node.node_key, lease_);
  election_->observe(mine->revision + 1, reconnect,
                     life_.guard([this](std::int64_t rev) { on_vacated(rev); }), lost_etcd);
  co_await campaign();
  if (!alive || closed_ || lost_) co_return;

  join_.node.store_port = servers_.store_port();
  auto put = co_await client_.txn(etcd::put_if_absent(keys_.node(join_.node.node_key),
                                                      membership::encode_request(join_), lease_));
  if (!alive || closed_) co_return;
  if (!put) co_return lost(put.status());
  if (!put->succeeded) {
    co_return lost(
        internal_error("node key " + keys_.node(join_.node.node_key) + " already exists"));
  }
  spdlog::info("joined job {} through etcd {} (node {}, lease {} s)", setup_.group.run_id, where,
               join_.node.node_key, settings_.lease_ttl.count());
  events_->on_payload(membership::Joined{0, false});
}

asio::awaitable<void> EtcdLink::campaign() {
  auto alive = life_.watch();
  if (closed_ || campaigning_ || coordinator_ || finished_) co_return;
  campaigning_ = true;
  auto fence = co_await election_->campaign();
  if (!alive || closed_) co_return;
  campaigning_ = false;
  if (!fence) co_return lost(fence.status());
  if (!*fence) co_return;
  coordinator_ = std::make_unique<rendezvous::EtcdCoordinator>(
      io_, client_, keys_, setup_.group.run_id, lease_, join_.node.node_key, **fence,
      coordinator_gone_revision_,
      [this](Status why) { lost(Status(why.code(), "coordinating the job: " + why.message())); });
  coordinator_->start();
}

void EtcdLink::on_vacated(std::int64_t revision) {
  if (closed_ || lost_ || finished_) return;
  coordinator_gone_revision_ = revision;  // where a successor orders the loss
  if (coordinator_) return;               // not this node's key: its lease is alive while this runs
  events_->on_reform("the node coordinating the job left; the job re-forms");
  asio::co_spawn(io_, campaign(), asio::detached);
}

void EtcdLink::on_events(const std::vector<etcd::WatchEvent>& events) {
  for (const auto& e : events) {
    if (closed_ || lost_ || finished_) return;
    if (e.deleted) continue;
    auto decoded = membership::decode_push(e.kv.value);
    if (decoded.state != membership::DecodeState::kComplete) {
      spdlog::warn("{} does not hold a ddprun event; ignored", e.kv.key);
      continue;
    }
    if (auto* j = std::get_if<membership::Joined>(&decoded.message); j && j->waiting) {
      spdlog::info("job {}: a round is running; this node joins at round {}", setup_.group.run_id,
                   j->round);
    }
    // After either, nothing of this job is this node's business (no campaign, no push).
    finished_ = std::holds_alternative<membership::JobFinished>(decoded.message);
    lost_ = std::holds_alternative<membership::ErrorEvent>(decoded.message);
    events_->on_payload(decoded.message);
  }
}

void EtcdLink::send(const membership::Request& request) {
  if (auto* leave = std::get_if<membership::Leave>(&request)) {
    leave_reason_ = leave->reason;  // the destructor's last words
    return;
  }
  if (lease_ == 0 || closed_) return;
  std::string key = keys_.request(join_.node.node_key, ++request_seq_);
  std::string value = membership::encode_request(request);
  asio::co_spawn(
      io_,
      [this, alive = life_.watch(), key = std::move(key),
       value = std::move(value)]() -> asio::awaitable<void> {
        auto r = co_await client_.put(key, value, lease_);
        if (!alive || closed_) co_return;
        if (!r) lost(Status(r.status().code(), "cannot report to etcd: " + r.status().message()));
      },
      asio::detached);
}

void EtcdLink::wait_finished(std::function<void()> done) {
  if (coordinator_) return coordinator_->when_drained(std::move(done));
  asio::post(io_, std::move(done));
}

void EtcdLink::lost(Status why) {
  if (closed_ || lost_) return;
  lost_ = true;
  events_->on_link_lost(why);
}

void EtcdLink::close() {
  if (closed_) return;
  closed_ = true;
  life_.end();
  if (session_) session_->close();
  if (coordinator_) coordinator_->stop();
  if (event_watch_) event_watch_->cancel();
  election_.reset();
  servers_.stop();
}

}  // namespace ddp::agent
