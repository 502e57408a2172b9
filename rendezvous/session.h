// One client connection of the store server: waits for the socket to become readable,
// drains it, parses requests (rendezvous/protocol.h), applies them to the Store and queues
// the replies, which are written in order.
//
// Memory: an idle connection owns no read buffer. Reads go into the server-wide scratch
// buffer (safe: one thread, and the read is a synchronous non-blocking read_some right
// after the socket reported readable); only the tail of a half-received request is kept.
// Why a readiness callback and not a coroutine per connection: nothing inside a read
// burst awaits (parse and store calls are synchronous), so a coroutine would only hold the
// wait, and a parked Asio coroutine costs ~1.8 KB of heap per connection against ~0.9 KB
// for the callback (measured with 1000 idle connections). The 10,000-connection budget
// (< 20 MB RSS for the daemon) needs the smaller one. The accept loop is a coroutine.
//
// Native rendezvous requests (0x80..0x8F) may share the connection with TCPStore queries;
// rendezvous/framer.h draws how they are told apart and how replies are framed once the
// connection has sent one. Native requests go to the server-wide NativeHub, which pushes
// events back through NativePeer::push; the session leaves the hub when it closes, so the
// node is gone at once.
//
// Failure: malformed, oversized or unknown input, ADD on a non-numeric value, or a client
// that stops reading its replies closes this connection only, with a logged reason.
//
// Connection limits (session_limits.cc, docs/security.md): a session holds its admission slot
// (Admission::Ticket) until it closes; until its first complete request it holds a timer, whose
// expiry closes a connection that sent part of a request (one that sent nothing is kept); a
// TCPStore query that touches keys from a peer outside --store-allow closes the connection.
//
// Threading: everything on the server's io_context thread. Lifetime: shared_ptr held by
// its own coroutine and in-flight write; the context keeps raw pointers to live sessions
// so stop() can close them.
#pragma once

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "rendezvous/admission.h"
#include "rendezvous/connection_limits.h"
#include "rendezvous/framer.h"
#include "rendezvous/limits.h"
#include "rendezvous/native_hub.h"
#include "rendezvous/protocol.h"
#include "rendezvous/refusal_log.h"
#include "rendezvous/store.h"

namespace ddp::rendezvous {

class Session;

// State shared by all sessions of one server. Outlives every session (they hold it).
struct SessionContext {
  SessionContext(boost::asio::any_io_executor executor, const Limits& l,
                 rendezvous::membership::RegistryOptions registry = {}, ConnectionLimits conn = {},
                 ConnectionCaps conn_caps = {}, AuthOptions auth = {})
      : limits(l),
        native(std::move(executor), registry, std::move(auth)),
        connections(std::move(conn)),
        admission(conn_caps.max_connections, conn_caps.max_per_peer) {}
  // Logs one refusal of `peer`, rate-limited per reason (rendezvous/refusal_log.h).
  void note_refusal(Refusal why, const boost::asio::ip::address& peer);

  Store store;
  Limits limits;
  NativeHub native;
  ConnectionLimits connections;
  Admission admission;
  RefusalLog refusals;
  std::vector<char> scratch = std::vector<char>(std::size_t{64} << 10);
  std::unordered_set<Session*> live;
  // Requests served since start, for the status endpoint: TCPStore ops by Op, native ones.
  std::array<std::uint64_t, kOpCount> ops{};
  std::uint64_t native_requests = 0;
};

class Session final : public Subscriber,
                      public NativePeer,
                      public std::enable_shared_from_this<Session> {
 public:
  // Takes ownership of an accepted socket (whose peer is `peer`, as accept reported it) and
  // of its admission slot (given back when the connection closes), and starts serving it on
  // its executor; the first-request deadline (ConnectionLimits) starts now.
  static void start(std::shared_ptr<SessionContext> ctx, boost::asio::ip::tcp::socket socket,
                    const boost::asio::ip::tcp::endpoint& peer, Admission::Ticket ticket = {});

  Session(std::shared_ptr<SessionContext> ctx, boost::asio::ip::tcp::socket socket,
          const boost::asio::ip::tcp::endpoint& peer, Admission::Ticket ticket = {});
  ~Session() override;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Closes the connection (idempotent); `reason` is logged, at warn level when `error`.
  void close(std::string_view reason, bool error);
  // The connection has sent a native rendezvous request (it is a node, not a store client).
  bool native() const { return node_id_.has_value(); }

  // Subscriber: called by the store from other sessions' requests.
  void wait_satisfied() override;
  void key_changed(WatchEvent event, std::string_view key, std::string_view old_value,
                   std::string_view new_value) override;
  // NativePeer: called by the hub with an encoded event for this connection.
  void push(std::string_view bytes) override;

 private:
  void arm();  // waits for the socket to become readable
  void on_readable(boost::system::error_code ec);
  // Feeds received bytes through the parser; false when the connection must close.
  bool consume(std::string_view data);
  // Parses and handles every complete request at the front of `view`; returns the number
  // of bytes used, or nullopt after closing the connection.
  std::optional<std::size_t> handle_all(std::string_view view);
  bool handle_store(Request& request);
  bool handle(Request& request);  // applies a TCPStore query, appends its raw reply to out_
  void handle_native(rendezvous::membership::Request request);
  // Answers the agent's HELLO with VERSION; false (closed) when the two cannot work together.
  bool answer_hello();
  // The job-secret messages (protocol.h): same WATCH_KEY exclusion, then the hub's gate.
  void handle_auth(Frame& frame);
  bool become_native();  // false after closing (WATCH_KEY on this connection)
  void flush();
  std::string peer() const;
  // Connection limits (session_limits.cc): the first-request deadline, and whether a decoded
  // TCPStore query may run for this peer (false after closing the connection).
  void start_first_request_deadline();
  void first_request_done();
  bool store_query_allowed(Op op);

  std::shared_ptr<SessionContext> ctx_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::ip::tcp::endpoint peer_;
  std::string in_;          // unparsed tail of a half-received request
  std::size_t needed_ = 0;  // parse again once in_ holds this many bytes
  std::string out_;         // replies queued while a write is in flight
  std::string writing_;     // the bytes of the in-flight write
  Framer framer_;
  std::optional<rendezvous::membership::NodeId> node_id_;  // set by the first native request
  bool watching_ = false;                                  // sent WATCH_KEY (never native, then)
  bool in_store_query_ = false;                            // handle_store() is collecting a reply
  std::string deferred_;  // framed WAIT replies completed by the query in progress
  bool closed_ = false;
  bool store_allowed_ = true;  // the peer is inside --store-allow (or there is no list)
  Admission::Ticket ticket_;
  // Until the first complete request only: a timer costs ~100 bytes, which a connection that
  // idles for the whole job should not keep.
  std::unique_ptr<boost::asio::steady_timer> first_request_timer_;
  bool heard_ = false;  // received at least one byte
};

}  // namespace ddp::rendezvous
