// The agent's side of the native rendezvous: one connection to the rendezvous daemon (embedded
// or standalone `ddp-rendezvous`), asynchronous on the caller's io_context.
//
// API style: callbacks, not awaitables. The agent is a state machine driven by events (its
// workers' exits, signals, these pushes); a callback per event feeds it directly, whereas an
// awaitable fits one linear flow and would need a coroutine parked on "the next push" beside
// every other wait. A coroutine caller can still wrap join()/store() in async_initiate.
//
// Threading contract: create the client and call every method on the thread that runs `io`
// (or before io.run() starts). Every callback runs on that thread, never inside the method
// that caused it (always posted or from a completion), so a callback may call back into the
// client, including close(). No locks.
//
// Lifetime: create() returns a shared_ptr; pending operations keep the client alive, so the
// caller may drop its pointer after close(). After close() or a disconnect, no callback runs
// except completions that report the end (kCancelled after close(), else the disconnect's
// status).
//
// Flow:  connect -> join (HELLO, VERSION, JOIN) -> Joined (callback) -> RoundComplete / StopWorkers
// / JobFinished /
//        ErrorEvent / Waiting / Straggler pushes (on_event) ... -> LEAVE (send_request) or
//        close().
// join() first sends HELLO and reads the daemon's VERSION (membership/wire.h): a daemon whose
// protocol cannot work with this one, or a protocol-1 daemon, ends the join with kProtocol
// naming both ddprun versions and the side to upgrade.
// Heartbeats start once JOIN is on the wire and are sent every config.keep_alive_interval
// until close; the daemon drops a node silent for keep_alive_interval * keep_alive_max_attempt.
// The other direction: each heartbeat tick with no store query outstanding also sends a
// TCPStore PING on the connection, which the daemon answers. When a reply has been owed for
// that same budget and no byte at all came from the daemon meanwhile (a partition: the TCP
// connection stays open but silent), the client ends with on_disconnect(kPeerGone "... sent
// nothing for N ms ..."). A parked WAIT is not owed a reply (no probe is sent behind it).
// A heartbeat tick that fires over an interval late means this process itself was paused
// (SIGSTOP, a VM freeze): silence is then counted from the wake-up, so what the daemon sent
// meanwhile (e.g. that it removed this node) is read before the daemon is judged silent.
// Job secrets: after use_secret(), join() sends AUTH_HELLO after VERSION, waits for the
// daemon's CHALLENGE, and from then on every native request (JOIN, heartbeats, reports, LEAVE)
// goes out as an AUTH_FRAME signed with the job key (rendezvous/auth/auth.h, protocol.h): one
// round trip per connection. The secret stays in this object; only MACs and, for a job the
// daemon does not know yet, the X25519-wrapped job key go on the wire (a fresh X25519 pair
// per wrap: rendezvous/auth/key_wrap.h). The agent calls join() from its connect callback, so
// HELLO goes out as soon as the connection is up. A wrong secret ends the join with
// kUnauthenticated. TCPStore queries may share the connection (rendezvous/framer.h): store()
// keeps one in flight and queues the rest, so replies match queries; a WAIT that never
// completes blocks later store() calls (but not rendezvous traffic).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "rendezvous/membership/messages.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/protocol.h"

namespace ddp::rendezvous {

struct RdzvClientHandlers {
  // Every push after the JOIN reply: RoundComplete, StopWorkers, JobFinished, Waiting,
  // Straggler, ErrorEvent (e.g. kTimeout when the first round never reached MIN nodes).
  std::function<void(const rendezvous::membership::Payload&)> on_event;
  // The daemon connection ended without close() (EOF, socket error, undecodable push):
  // kPeerGone or kProtocol naming the daemon. Called once; nothing else follows.
  std::function<void(const Status&)> on_disconnect;
};

class RdzvClient : public std::enable_shared_from_this<RdzvClient> {
 public:
  static std::shared_ptr<RdzvClient> create(boost::asio::io_context& io,
                                            RdzvClientHandlers handlers);
  ~RdzvClient();
  RdzvClient(const RdzvClient&) = delete;
  RdzvClient& operator=(const RdzvClient&) = delete;

  // Resolves and connects; `done` gets OK, kTimeout ("cannot reach the rendezvous daemon at
  // HOST:PORT within 5000ms; check --rdzv-endpoint and that the daemon runs") or kIo.
  void connect(std::string host, std::uint16_t port, std::chrono::milliseconds timeout,
               std::function<void(Status)> done);

  // Sign every native request with the job key derived from `secret` (call before join()).
  void use_secret(std::string secret);

  // Sends JOIN; `done` gets the daemon's Joined, or its ErrorEvent as a Status (bad config,
  // config mismatch, job finished, ...), or kPeerGone when the connection ends first.
  // One join per connection. Starts the heartbeat timer.
  void join(rendezvous::membership::JoinRequest request,
            std::function<void(Result<rendezvous::membership::Joined>)> done);

  // Fire-and-forget: a report, QueryWaiting (answered with a Waiting push while the round
  // forms) or LEAVE (the job stays open for the others; the connection closes once it is
  // written). Not a JOIN: join() sends that.
  void send_request(const rendezvous::membership::Request& request);

  // A TCPStore query (>= 2.2 numbering, e.g. SET/GET/ADD/WAIT; not WATCH_KEY) on this
  // connection; `done` gets its raw reply bytes as protocol.h draws them (empty for SET), or
  // an error. Queries made before join() are held until JOIN is sent (the daemon frames
  // store replies only from a connection's first native request on).
  void store(Request request, std::function<void(Result<std::string>)> done);

  // Closes now: pending join/store completions get kCancelled; no on_disconnect.
  void close();
  bool is_open() const;

  // Explicit for tests and benchmarks that simulate a hung agent: stop heartbeating but keep
  // the connection open.
  void stop_heartbeats();

  // Use create(); public only for make_shared.
  RdzvClient(boost::asio::io_context& io, RdzvClientHandlers handlers);

 private:
  struct StoreCall {
    std::string bytes;
    std::function<void(Result<std::string>)> done;  // empty for the liveness PING
    bool owes_reply = true;                         // false for WAIT (may park forever)
  };
  using Clock = std::chrono::steady_clock;

  void send(std::string bytes);
  // A native request, signed when a secret is in use.
  void send_native(const rendezvous::membership::Request& request);
  // The daemon's VERSION (nullopt: a protocol-1 daemon's refusal of HELLO): sends AUTH_HELLO
  // or the held JOIN, or ends the join with the version skew.
  void on_version(std::optional<rendezvous::membership::Version> daemon);
  // Reads the answer to HELLO at the front of `rest`; the bytes used, 0 while incomplete.
  std::size_t consume_version(std::string_view rest);
  // The daemon's CHALLENGE: sends the held JOIN as the first AUTH_FRAME.
  void on_challenge(const ChallengeMessage& challenge);
  // JOIN is on the wire: heartbeats and held store queries start.
  void joined_sent();
  void flush();
  void read_more();
  // Decodes every complete push at the front of in_; false after ending the connection.
  bool consume();
  bool on_push(rendezvous::membership::Payload push);
  void on_store_reply(std::string reply);
  void send_next_store();
  void arm_heartbeat();
  // One heartbeat tick's liveness work: ends the connection when the daemon went silent
  // (returns false), else queues a PING when nothing is outstanding.
  bool check_daemon_alive();
  // Ends the connection: `why` OK for close(), else the on_disconnect status.
  void end(Status why);

  boost::asio::io_context& io_;
  RdzvClientHandlers handlers_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer heartbeat_;
  std::string peer_;  // "host:port" for messages
  std::chrono::milliseconds keep_alive_{0};
  bool heartbeats_on_ = false;
  std::chrono::milliseconds silence_budget_{0};  // keep_alive_interval * max_attempt
  Clock::time_point last_rx_{};                  // last byte from the daemon
  Clock::time_point resumed_at_{};               // when this process last woke from a pause
  std::optional<Clock::time_point> owed_since_;  // in-flight query that must be answered
  std::uint32_t ping_nonce_ = 0;
  std::string in_;
  std::string out_;
  std::string writing_;
  bool close_after_write_ = false;
  bool open_ = false;
  bool ended_ = false;
  std::function<void(Result<rendezvous::membership::Joined>)> join_done_;
  std::deque<StoreCall> store_calls_;  // front is in flight when store_in_flight_
  bool store_in_flight_ = false;
  bool join_sent_ = false;  // store queries wait for it: only then are replies framed
  std::optional<std::string> secret_;
  auth::Key job_key_{};
  std::optional<auth::MacKey> mac_key_;  // job_key_, made ready for this connection's frames
  std::string run_id_;
  std::optional<auth::Challenge> challenge_;
  std::uint64_t counter_ = 0;
  bool version_pending_ = false;  // HELLO sent, VERSION not read yet
  std::optional<rendezvous::membership::JoinRequest> held_join_;  // until JOIN is sent
};

}  // namespace ddp::rendezvous
