#include "agent/membership/etcd_link.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include "agent/membership/etcd_state.h"
#include "common/host_port.h"
#include "common/text.h"
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

// One blocking revoke on a private io_context: for the last words, when no loop runs.
void revoke_blocking(const EtcdSettings& s, std::chrono::milliseconds timeout, std::int64_t lease) {
  etcd::ClientOptions last = keep_alive_options(s);
  last.request_timeout = timeout;
  (void)etcd::call_blocking(last, "/v3/lease/revoke", etcd::Json{{"ID", std::to_string(lease)}});
}

std::string finished_text(const membership::JobFinished& f) {
  return "exit code " + std::to_string(f.exit_code) + (f.reason.empty() ? "" : ": " + f.reason);
}

// The compare "key not modified since `mod_revision`" (0: still absent), outside a coroutine.
std::vector<etcd::Json> unchanged(const std::string& key, std::int64_t mod_revision) {
  return {etcd::compare_mod_revision(key, mod_revision)};
}

}  // namespace

proc::DeathWatch::LastWords lease_revoker(const EtcdSettings& settings) {
  return [settings](const std::string& note) {
    const auto lease = parse_number<std::int64_t>(note);
    if (lease && *lease != 0) revoke_blocking(settings, 2s, *lease);
  };
}

Result<std::unique_ptr<EtcdLink>> EtcdLink::start(asio::io_context& io, const AgentConfig& config,
                                                  const RunSetup& setup, EtcdSettings settings,
                                                  proc::DeathWatch* death_watch) {
  return std::make_unique<EtcdLink>(io, config, setup, std::move(settings), death_watch);
}

EtcdLink::EtcdLink(asio::io_context& io, const AgentConfig& config, const RunSetup& setup,
                   EtcdSettings settings, proc::DeathWatch* death_watch)
    : io_(io),
      config_(config),
      setup_(setup),
      settings_(std::move(settings)),
      keys_(settings_, setup.group.run_id),
      addr_(advertised_addr(config, setup)),
      own_key_(node_join(config, setup, {}, 0).node.node_key),
      client_(io.get_executor(), call_options(settings_)),
      death_watch_(death_watch) {}

EtcdLink::~EtcdLink() {
  close();
  if (lease_ == 0) return;
  // After a lost etcd, a short try: the exit must not wait on an unreachable etcd.
  revoke_blocking(settings_, lost_ ? 300ms : 2s, lease_);
  // Tried: the death watch is not to try again after this process exits.
  if (death_watch_) death_watch_->clear_last_words();
}

void EtcdLink::open(LinkEvents& events) {
  events_ = &events;
  asio::co_spawn(io_, run_open(), asio::detached);
}

asio::awaitable<void> EtcdLink::run_open() {
  auto alive = life_.watch();
  auto session = co_await etcd::Session::open(client_, keep_alive_options(settings_),
                                              settings_.lease_ttl, [this](Status s) { lost(s); });
  if (!alive || closed_) co_return;
  if (!session) {
    co_return lost(Status(session.status().code(),
                          session.status().message() +
                              "; start etcd (>= 3.4) there, check --rdzv-endpoint, or raise "
                              "--rdzv-conf read_timeout"));
  }
  session_ = std::move(*session);
  lease_ = session_->lease();
  if (session_->ttl() > settings_.lease_ttl) {
    spdlog::warn(
        "etcd granted a lease of {} s for lease_ttl={}: its smallest (1.5 x its election "
        "timeout, rounded up); a lost host is noticed after {} s",
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
                  ? std::get_if<membership::JobFinished>(&decoded.value)
                  : nullptr;
    co_return lost(job_finished(
        "job '" + setup_.group.run_id + "' finished (" +
        (f ? finished_text(*f) : std::string("its record is not ddprun's")) +
        "); start a new job with a different --rdzv-id (etcd keeps " + keys_.finished() + ")"));
  }
  election_.emplace(client_, keys_.host(), lease_);
  election_->observe(
      finished->revision + 1,
      std::chrono::duration_cast<std::chrono::milliseconds>(settings_.lease_ttl),
      life_.guard([this](std::int64_t) {
        if (fence_ == 0) host_lost("the node hosting the job's rendezvous left");
      }),
      life_.guard([this](Status why) { lost(Status(why.code(), "lost etcd: " + why.message())); }));
  seeking_ = true;
  co_await seek();
}

void EtcdLink::host_lost(const std::string& detail) {
  if (closed_ || lost_ || finished_value_) return;
  spdlog::info("job {}: {}; the job re-forms", setup_.group.run_id, detail);
  host_was_lost_ = true;
  events_->on_reform(detail + "; the job re-forms");
  if (seeking_) {
    reseek_ = true;  // the holder the running seek reads may be the one that left
    return;
  }
  seeking_ = true;
  asio::post(io_, life_.guard([this] {
    if (link_) link_->close();
    link_.reset();
    asio::co_spawn(io_, seek(), asio::detached);
  }));
}

std::optional<membership::ResumePoint> EtcdLink::resume_point(const std::string& state) const {
  std::optional<membership::ResumePoint> at =
      state.empty() ? std::nullopt : decode_state(state, WallClock::now());
  if (!state.empty() && !at)
    spdlog::warn("{} does not hold ddprun's job state; ignored", keys_.state());
  if (!at && last_round_ == 0) return std::nullopt;  // a job that never ran: no resume
  if (!at) at.emplace();
  // P/state is the host's record of a round's start; this node may have seen a later round,
  // and its own workers' steps and stepping time in it.
  at->round = std::max<std::uint64_t>(at->round, last_round_ + 1);
  at->restart_count = std::max(at->restart_count, last_restart_count_);
  if (own_best_step_ && (!at->best_step || *own_best_step_ > *at->best_step)) {
    at->best_step = own_best_step_;
    at->no_progress_restarts = 0;  // that round made progress
  }
  at->stepping += own_stepping_;
  if (host_was_lost_) {
    ++at->departures;  // the old host was a node of the job
    at->expected_nodes = last_world_ > 1 ? last_world_ - 1 : 0;
    if (!at->ranks.empty())  // the old host left its own key out
      at->expected_nodes = static_cast<std::uint32_t>(
          at->ranks.size() - std::count(at->ranks.begin(), at->ranks.end(), std::string()));
  }
  return at;
}

asio::awaitable<void> EtcdLink::seek() {
  auto alive = life_.watch();
  auto ended = [&] { return !alive || closed_ || lost_; };
  for (;;) {
    reseek_ = false;
    auto state = co_await client_.range(keys_.state());
    if (ended()) co_return;
    if (!state) co_return lost(state.status());
    // A daemon of this node's own, bound before the campaign so P/host can name it.
    RdzvSettings own = settings_.rdzv;
    own.host = addr_;
    own.port = 0;
    own.is_host = true;
    own.resume = resume_point(state->kvs.empty() ? std::string() : state->kvs[0].value);
    if (own.resume) {  // a job that ran: the spares its next host waits for (none before)
      auto spares = co_await client_.count_prefix(keys_.spares());
      if (ended()) co_return;
      if (!spares) co_return lost(spares.status());
      own.resume->spares = static_cast<std::uint32_t>(*spares);
    }
    auto mine = NativeLink::start(io_, config_, setup_, std::move(own));
    if (!mine) co_return lost(mine.status());
    // Won only if P/state is still what was read: a host's last write racing this read would
    // otherwise be resumed from an older round.
    const std::int64_t state_rev = state->kvs.empty() ? 0 : state->kvs[0].mod_revision;
    auto holder = co_await election_->campaign(join_host_port(addr_, (*mine)->daemon_port()),
                                               unchanged(keys_.state(), state_rev));
    if (ended()) co_return;
    if (!holder) {
      co_return lost(Status(holder.status().code(), "lost etcd: " + holder.status().message()));
    }
    if (holder->mine) {  // elected, whatever left meanwhile
      fence_ = holder->revision;
      link_ = std::move(*mine);
      spdlog::info("hosting the rendezvous for job {} on {}:{} (elected through etcd {})",
                   setup_.group.run_id, addr_, link_->daemon_port(),
                   etcd::join_endpoints(settings_.endpoints));
      break;
    }
    (*mine)->close();
    // Nobody holds it (P/state moved), or the holder read may be the host that just left.
    if (holder->value.empty() || reseek_) continue;
    auto where = parse_host_port(holder->value);
    if (!where || !where->port) {
      co_return lost(invalid_argument(keys_.host() + " holds '" + holder->value +
                                      "', not a ddprun host; use another --rdzv-conf etcd_prefix"));
    }
    RdzvSettings theirs = settings_.rdzv;
    theirs.host = where->host;
    theirs.port = *where->port;
    theirs.is_host = false;
    auto link = NativeLink::start(io_, config_, setup_, std::move(theirs));
    if (!link) co_return lost(link.status());
    link_ = std::move(*link);
    break;
  }
  seeking_ = false;
  joined_ = false;
  link_->open(*this);
}

void EtcdLink::on_payload(const membership::Payload& payload) {
  if (closed_ || lost_) return;
  if (auto* j = std::get_if<membership::Joined>(&payload)) {
    joined_ = true;
    if (j->waiting) mark_spare(true);
  }
  if (auto* r = std::get_if<membership::RoundComplete>(&payload)) {
    if (spare_key_) mark_spare(false);
    last_round_ = r->round;
    last_restart_count_ = r->restart_count;
    last_world_ = r->group_world_size;
    own_stepping_ = {};
    host_was_lost_ = false;
    if (fence_ != 0) write_state();
  }
  if (auto* f = std::get_if<membership::JobFinished>(&payload)) {
    finished_value_ = membership::encode_push(*f);
  }
  events_->on_payload(payload);
}

void EtcdLink::on_reform(const std::string& detail) { events_->on_reform(detail); }

void EtcdLink::on_link_lost(const Status& why) {
  // After the JOIN was accepted a lost connection is a lost host, unless this node is it.
  if (joined_ && fence_ == 0 && !finished_value_)
    return host_lost("lost the job's rendezvous host (" + why.message() + ")");
  lost(why);
}

void EtcdLink::write_state() {
  const membership::Job* job = link_ ? link_->hosted_job() : nullptr;
  if (job == nullptr) return;
  // What a successor resumes from once this host is lost: without this node.
  membership::ResumePoint at = job->resume_point(membership::Clock::now());
  std::replace(at.ranks.begin(), at.ranks.end(), own_key_, std::string());
  etcd::Txn txn = fenced_put(keys_.state(), encode_state(at, WallClock::now()));
  asio::co_spawn(
      io_,
      [this, alive = life_.watch(), txn = std::move(txn)]() mutable -> asio::awaitable<void> {
        auto r = co_await client_.txn(std::move(txn));
        if (!alive || closed_) co_return;
        if (!r)
          co_return spdlog::warn("cannot record the job's state in etcd: {}", r.status().message());
        if (!r->succeeded) {
          lost(peer_gone("this agent no longer hosts job '" + setup_.group.run_id +
                         "' (another agent was elected while its lease lapsed)"));
        }
      },
      asio::detached);
}

void EtcdLink::mark_spare(bool waiting) {
  spare_key_ = waiting;
  if (spare_writing_) return;  // the running write loop writes the latest wish next
  spare_writing_ = true;
  asio::co_spawn(io_, write_spare(), asio::detached);
}

asio::awaitable<void> EtcdLink::write_spare() {
  // One write at a time, so a delete never overtakes the put before it.
  auto alive = life_.watch();
  for (bool written = !spare_key_; written != spare_key_;) {
    written = spare_key_;
    auto r = co_await client_.txn(spare_txn(written));
    if (!alive || closed_) co_return;
    if (!r) {
      spdlog::warn("cannot record in etcd whether this node waits as a spare: {}",
                   r.status().message());
    }
  }
  spare_writing_ = false;
}

etcd::Txn EtcdLink::spare_txn(bool waiting) const {
  // Built outside the coroutine: GCC 12 mishandles a conditional's temporaries inside one.
  const std::string key = keys_.spares() + own_key_;
  return {.compare = {},
          .success = {waiting ? etcd::op_put(key, "", lease_) : etcd::op_delete(key)},
          .failure = {}};
}

etcd::Txn EtcdLink::fenced_put(const std::string& key, const std::string& value) const {
  return {.compare = {etcd::compare_create_revision(keys_.host(), fence_)},
          .success = {etcd::op_put(key, value)},
          .failure = {}};
}

void EtcdLink::send(const membership::Request& request) {
  if (auto* p = std::get_if<membership::Progress>(&request); p && p->round == last_round_) {
    own_stepping_ = p->stepping;
    for (const auto& r : p->ranks)
      own_best_step_ = std::max(own_best_step_.value_or(r.step), r.step);
  }
  if (link_) link_->send(request);
}

void EtcdLink::wait_finished(std::function<void()> done) {
  // P/finished first: the fan-out reads the job's end there once an agent exited.
  asio::co_spawn(
      io_,
      [this, alive = life_.watch(), done = std::move(done)]() mutable -> asio::awaitable<void> {
        if (finished_value_) {
          // The host's end is the job's only while it still holds P/host: a host deposed
          // while it was stopped (its lease lapsed, another was elected) may see its own
          // daemon's job fail as the others leave it, and must not record that. Its write,
          // fenced, may replace a node's (the same end, from this host's daemon).
          // A named Txn, not a conditional in the co_await: GCC 12 mishandles such a
          // temporary (heap corruption at exit, seen in etcd_it_EtcdLossTest).
          etcd::Txn txn = fence_ == 0 ? etcd::put_if_absent(keys_.finished(), *finished_value_)
                                      : fenced_put(keys_.finished(), *finished_value_);
          auto r = co_await client_.txn(std::move(txn));
          if (!alive || closed_) co_return;
          if (!r) {
            spdlog::warn("cannot record the job's end in etcd: {}", r.status().message());
          } else if (fence_ != 0 && !r->succeeded) {
            spdlog::error(
                "this agent no longer hosts job '{}' (another agent was elected while its lease "
                "lapsed): the end above is its own, not the job's, which goes on without it",
                setup_.group.run_id);
          }
        }
        if (link_) co_return link_->wait_finished(std::move(done));
        asio::post(io_, std::move(done));
      },
      asio::detached);
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
  election_.reset();
  if (link_) link_->close();
}

}  // namespace ddp::agent
