#include "rendezvous/rdzv_client.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <utility>

#include "rendezvous/framer.h"
#include "rendezvous/membership/wire.h"

namespace ddp::rendezvous {

namespace asio = boost::asio;
using asio::ip::tcp;

std::shared_ptr<RdzvClient> RdzvClient::create(asio::io_context& io, RdzvClientHandlers handlers) {
  return std::make_shared<RdzvClient>(io, std::move(handlers));
}

RdzvClient::RdzvClient(asio::io_context& io, RdzvClientHandlers handlers)
    : io_(io), handlers_(std::move(handlers)), socket_(io), heartbeat_(io) {}

RdzvClient::~RdzvClient() = default;

bool RdzvClient::is_open() const { return open_ && !ended_; }

void RdzvClient::connect(std::string host, std::uint16_t port, std::chrono::milliseconds timeout,
                         std::function<void(Status)> done) {
  peer_ = host + ":" + std::to_string(port);
  // The connect races a timer; whichever finishes first settles `done` exactly once.
  struct Attempt {
    tcp::resolver resolver;
    asio::steady_timer timer;
    std::function<void(Status)> done;
    bool settled = false;
  };
  auto attempt = std::make_shared<Attempt>(
      Attempt{tcp::resolver(io_), asio::steady_timer(io_, timeout), std::move(done)});
  auto settle = [self = shared_from_this(), attempt](Status s) {
    if (attempt->settled) return;
    attempt->settled = true;
    attempt->timer.cancel();
    attempt->resolver.cancel();
    if (s) {
      self->open_ = true;
      boost::system::error_code ignored;
      self->socket_.set_option(tcp::no_delay(true), ignored);
      self->read_more();
    } else {
      boost::system::error_code ignored;
      self->socket_.close(ignored);
    }
    attempt->done(std::move(s));
  };
  attempt->timer.async_wait([settle, peer = peer_, timeout](boost::system::error_code ec) {
    if (ec) return;
    settle(timeout_error("cannot reach the rendezvous daemon at " + peer + " within " +
                         std::to_string(timeout.count()) +
                         "ms; check --rdzv-endpoint and that the daemon runs"));
  });
  attempt->resolver.async_resolve(
      host, std::to_string(port),
      [self = shared_from_this(), attempt, settle](boost::system::error_code ec,
                                                   tcp::resolver::results_type results) {
        if (attempt->settled) return;
        if (ec) {
          settle(io_error("cannot resolve rendezvous endpoint " + self->peer_ + ": " +
                          ec.message() + "; check --rdzv-endpoint"));
          return;
        }
        asio::async_connect(
            self->socket_, results,
            [self, settle](boost::system::error_code ec2, const tcp::endpoint&) {
              if (ec2) {
                settle(io_error("cannot connect to the rendezvous daemon at " + self->peer_ + ": " +
                                ec2.message() + "; check --rdzv-endpoint and that it runs"));
                return;
              }
              settle(Status::ok());
            });
      });
}

void RdzvClient::join(rendezvous::membership::JoinRequest request,
                      std::function<void(Result<rendezvous::membership::Joined>)> done) {
  if (!is_open() || join_done_) {
    asio::post(io_, [done = std::move(done), open = is_open()] {
      done(open ? invalid_argument("join already in progress on this connection")
                : peer_gone("the rendezvous connection is closed"));
    });
    return;
  }
  join_done_ = std::move(done);
  keep_alive_ = request.config.keep_alive_interval;
  silence_budget_ = request.config.heartbeat_budget();
  last_rx_ = Clock::now();
  if (secret_) {
    run_id_ = request.run_id;
    job_key_ = auth::job_key(*secret_, run_id_);
    mac_key_.emplace(job_key_);
  }
  held_join_ = std::move(request);
  version_pending_ = true;
  send(rendezvous::membership::encode_hello(rendezvous::membership::this_version()));
  // VERSION is owed from now on: a daemon silent for the budget is lost, as after JOIN (the
  // ticks send nothing before JOIN is on the wire).
  owed_since_ = Clock::now();
  heartbeats_on_ = true;
  arm_heartbeat();
}

void RdzvClient::on_version(std::optional<rendezvous::membership::Version> daemon) {
  version_pending_ = false;
  owed_since_.reset();
  const auto agent = rendezvous::membership::this_version();
  if (!daemon || !rendezvous::membership::compatible(agent, *daemon)) {
    auto done = std::move(join_done_);
    join_done_ = nullptr;
    end(Status::ok());
    done(protocol_error(rendezvous::membership::skew_message(agent, daemon, peer_)));
    return;
  }
  if (secret_) {
    send(encode_auth_hello(run_id_));  // the JOIN waits for the CHALLENGE, owed like VERSION
    owed_since_ = Clock::now();
    return;
  }
  send(rendezvous::membership::encode_request(*held_join_));
  held_join_.reset();
  joined_sent();
}

void RdzvClient::use_secret(std::string secret) { secret_ = std::move(secret); }

void RdzvClient::joined_sent() {
  join_sent_ = true;
  heartbeats_on_ = true;
  arm_heartbeat();
  send_next_store();
}

void RdzvClient::on_challenge(const ChallengeMessage& challenge) {
  if (!held_join_ || challenge_) {
    end(protocol_error("the rendezvous daemon at " + peer_ + " sent an unexpected CHALLENGE"));
    return;
  }
  challenge_ = challenge.challenge;
  owed_since_.reset();
  std::optional<auth::KeyWrap> wrap;
  if (!challenge.job_keyed) {
    // The daemon does not know this job yet: register its key (trust on first use).
    auto wrapped = auth::wrap_job_key(job_key_, challenge.daemon_public, challenge.challenge);
    if (!wrapped) {
      end(wrapped.status());
      return;
    }
    wrap = *wrapped;
  }
  const std::string covered =
      auth_covered(wrap, rendezvous::membership::encode_request(*held_join_));
  held_join_.reset();
  const auth::Mac mac = auth::frame_mac(*mac_key_, *challenge_, counter_, run_id_, covered);
  send(encode_auth_frame(counter_++, mac, covered));
  joined_sent();
}

void RdzvClient::send_native(const rendezvous::membership::Request& request) {
  if (!join_sent_) return;  // nothing to say before JOIN (the daemon would refuse it)
  std::string bytes = rendezvous::membership::encode_request(request);
  if (!secret_) {
    send(std::move(bytes));
    return;
  }
  const std::string covered = auth_covered(std::nullopt, bytes);
  const auth::Mac mac = auth::frame_mac(*mac_key_, *challenge_, counter_, run_id_, covered);
  send(encode_auth_frame(counter_++, mac, covered));
}

void RdzvClient::send_request(const rendezvous::membership::Request& request) {
  send_native(request);
  if (!std::holds_alternative<rendezvous::membership::Leave>(request)) return;
  close_after_write_ = true;
  heartbeats_on_ = false;
  heartbeat_.cancel();
  if (writing_.empty() && out_.empty()) end(Status::ok());
}

void RdzvClient::store(Request request, std::function<void(Result<std::string>)> done) {
  auto bytes = encode_request(Dialect::kModern, request);
  if (!bytes || !is_open()) {
    asio::post(io_, [done = std::move(done), known = bytes.has_value()] {
      done(known ? peer_gone("the rendezvous connection is closed")
                 : invalid_argument("this query does not exist in the >= 2.2 numbering"));
    });
    return;
  }
  store_calls_.push_back({std::move(*bytes), std::move(done), request.op != Op::kWait});
  send_next_store();
}

void RdzvClient::send_next_store() {
  if (!join_sent_ || store_in_flight_ || store_calls_.empty() || !is_open()) return;
  store_in_flight_ = true;
  if (store_calls_.front().owes_reply) {
    owed_since_ = Clock::now();
  } else {
    owed_since_.reset();
  }
  send(store_calls_.front().bytes);
}

void RdzvClient::close() { end(Status::ok()); }

void RdzvClient::stop_heartbeats() {
  heartbeats_on_ = false;
  heartbeat_.cancel();
}

void RdzvClient::arm_heartbeat() {
  if (!heartbeats_on_ || !is_open()) return;
  heartbeat_.expires_after(keep_alive_);
  heartbeat_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || !self->heartbeats_on_ || !self->is_open()) return;
    // Fired over an interval late: this process was paused or starved (SIGSTOP, a VM
    // freeze), so the daemon's silence meanwhile proves nothing; it counts from now, and
    // whatever the daemon sent meanwhile is read before the next check.
    const auto now = Clock::now();
    if (now - self->heartbeat_.expiry() > self->keep_alive_) self->resumed_at_ = now;
    if (!self->check_daemon_alive()) return;
    self->send_native(rendezvous::membership::Heartbeat{});
    self->arm_heartbeat();
  });
}

bool RdzvClient::check_daemon_alive() {
  const auto now = Clock::now();
  const auto heard = std::max(last_rx_, resumed_at_);
  if (owed_since_ && now - std::max(*owed_since_, resumed_at_) >= silence_budget_ &&
      now - heard >= silence_budget_) {
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - heard);
    end(peer_gone("lost the rendezvous daemon at " + peer_ + ": it sent nothing for " +
                  std::to_string(silent.count()) + "ms (budget keep_alive_interval x " +
                  "keep_alive_max_attempt = " + std::to_string(silence_budget_.count()) +
                  "ms); network partition or a hung daemon"));
    return false;
  }
  if (store_calls_.empty()) {
    auto ping = encode_request(Dialect::kModern, Request{.op = Op::kPing, .word = ++ping_nonce_});
    if (ping) {
      store_calls_.push_back({std::move(*ping), nullptr, true});
      send_next_store();
    }
  }
  return true;
}

void RdzvClient::send(std::string bytes) {
  if (!is_open()) return;
  out_.append(bytes);
  flush();
}

void RdzvClient::flush() {
  if (!writing_.empty() || out_.empty() || !is_open()) return;
  writing_.swap(out_);
  asio::async_write(socket_, asio::buffer(writing_),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      std::string().swap(self->writing_);
                      if (self->ended_) return;
                      if (ec) {
                        self->end(peer_gone("lost the rendezvous daemon at " + self->peer_ +
                                            ": write failed: " + ec.message()));
                        return;
                      }
                      if (self->close_after_write_ && self->out_.empty()) {
                        self->end(Status::ok());
                        return;
                      }
                      self->flush();
                    });
}

void RdzvClient::end(Status why) {
  if (ended_) return;
  ended_ = true;
  heartbeats_on_ = false;
  boost::system::error_code ignored;
  heartbeat_.cancel();
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  // Report the end to everyone still waiting, after this call returns.
  const Status pending = why ? cancelled("the rendezvous client was closed") : why;
  auto join_done = std::move(join_done_);
  join_done_ = nullptr;
  auto calls = std::move(store_calls_);
  store_calls_.clear();
  asio::post(io_, [self = shared_from_this(), why, pending, join_done = std::move(join_done),
                   calls = std::move(calls)]() mutable {
    if (join_done) join_done(pending);
    for (auto& call : calls) {
      if (call.done) call.done(pending);
    }
    if (!why && self->handlers_.on_disconnect) self->handlers_.on_disconnect(why);
  });
}

}  // namespace ddp::rendezvous
