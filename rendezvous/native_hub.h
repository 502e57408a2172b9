// The daemon side of the native rendezvous: owns the membership Registry of every job this
// server serves, the one timer armed at its next deadline, and the routing of events to the
// connections they address. Sessions call it; it pushes encoded events back through the
// NativePeer interface, so it has no socket code and no knowledge of Session.
//
// NodeIds are allocated here, once per connection at its first native request, and are never
// reused for the server's lifetime.
//
// Threading: the server's io_context thread only (one thread, no locks). Every call may push
// to any registered peer before returning (delivery is synchronous: peer->push queues bytes).
// Calls may nest (a push that makes a peer close calls closed() from inside a delivery).
// Lifetime: owned by SessionContext; stop() cancels the timer so the io_context can finish.
//
// Job secrets: a connection that sends AUTH_HELLO gets a CHALLENGE and from then on
// sends AUTH_FRAMEs only; the auth::Gate decides (rendezvous/auth/gate.h). A refused request
// changes nothing and gets an ErrorEvent kUnauthenticated on its own connection.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/lifetime.h"
#include "rendezvous/auth/gate.h"
#include "rendezvous/membership/messages.h"
#include "rendezvous/membership/registry.h"
#include "rendezvous/protocol.h"

namespace ddp::rendezvous {

// A connection that receives pushes. The hub holds raw pointers between attach() and
// detach(); the peer must detach (closed()) before it is destroyed.
class NativePeer {
 public:
  virtual ~NativePeer() = default;
  // Queue one encoded push (membership/wire.h) or CHALLENGE and start writing it.
  virtual void push(std::string_view bytes) = 0;
};

struct PinnedKey {
  std::string run_id;
  auth::Key key{};
};

struct AuthOptions {
  bool require_secret = false;  // refuse jobs without a secret (ddp-rendezvous --require-secret)
  // Jobs whose key this daemon knows from the start (the embedded daemon of a ddprun host).
  std::vector<PinnedKey> pinned;
};

class NativeHub {
 public:
  NativeHub(boost::asio::any_io_executor executor,
            rendezvous::membership::RegistryOptions options = {}, AuthOptions auth = {});
  ~NativeHub();
  NativeHub(const NativeHub&) = delete;
  NativeHub& operator=(const NativeHub&) = delete;

  // Registers `peer` and returns its NodeId.
  rendezvous::membership::NodeId attach(NativePeer& peer);
  // One decoded native request from `id`; its events (including the reply to JOIN) are
  // pushed before this returns.
  void handle(rendezvous::membership::NodeId id, rendezvous::membership::Request request);
  // AUTH_HELLO from `id`: binds the connection to `run_id` and pushes its CHALLENGE.
  void hello(rendezvous::membership::NodeId id, const std::string& run_id);
  // One AUTH_FRAME from `id` and its decoded inner request: handled as handle() does once the
  // gate accepts it, else an ErrorEvent kUnauthenticated and nothing else.
  void handle_auth(rendezvous::membership::NodeId id, const AuthFrame& frame,
                   rendezvous::membership::Request request);
  // The server listens on a non-loopback address: one warning at the first job without a
  // secret.
  void set_exposed(bool exposed) { exposed_ = exposed; }
  // Any other traffic from `id` (TCPStore queries) also proves it alive.
  void touch(rendezvous::membership::NodeId id);
  // The connection closed (EOF, error): the node is gone at once. After stop() (the server
  // closing every connection) only forgotten: nothing is judged or told.
  void closed(rendezvous::membership::NodeId id);
  // Calls `done` once, on this thread, when job `run_id` has finished and no connection is
  // bound to it any more (every node that was told JobFinished closed or LEFT), or at once
  // when that is already so. A host agent waits on it before stopping its embedded daemon,
  // so no other node's JobFinished is cut off. Dropped uncalled by stop().
  void when_drained(std::string run_id, std::function<void()> done);
  // Cancels the deadline timer; later calls still work but no deadline fires, and closed()
  // only forgets the connection.
  void stop();

  const rendezvous::membership::Registry& registry() const { return registry_; }

 private:
  void deliver(const rendezvous::membership::Events& events);
  void refuse(rendezvous::membership::NodeId id, const Status& why);
  void dispatch(rendezvous::membership::NodeId id, rendezvous::membership::Request request);
  void rearm();
  void on_timer();
  bool drained(const std::string& run_id) const;
  // Runs the drain callbacks whose job is drained now.
  void notify_drained();

  rendezvous::membership::Registry registry_;
  auth::Gate gate_;
  std::optional<auth::KeyPair> daemon_key_;  // for key wraps; made at the first AUTH_HELLO
  std::unordered_map<rendezvous::membership::NodeId, auth::ConnectionAuth> auth_;
  bool exposed_ = false;
  bool warned_keyless_ = false;
  boost::asio::steady_timer timer_;
  std::optional<rendezvous::membership::TimePoint> armed_;  // the deadline the timer waits for
  std::unordered_map<rendezvous::membership::NodeId, NativePeer*> peers_;
  rendezvous::membership::NodeId next_id_ = 1;
  std::vector<std::pair<std::string, std::function<void()>>> drain_waiters_;
  bool stopped_ = false;
  Lifetime life_;  // a timer handler already queued when the hub dies sees it gone
};

}  // namespace ddp::rendezvous
