// While a node waits for the first round of its job to form, shows how far the rendezvous is:
// asks the daemon (through `ask`, which sends QUERY_WAITING) after 2 s and then every 10 s,
// and logs each answer: "waiting for the other nodes: 1 of 2 joined; 588 s left before the
// join timeout". A round that forms at once prints nothing. A calm rate, and a question the
// daemon answers in O(1), rather than a push to every node on every join.
//
// Threading: the io_context's thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>

#include "rendezvous/membership/messages.h"

namespace ddp::agent {

class JoinProgress {
 public:
  JoinProgress(boost::asio::io_context& io, std::function<void()> ask);

  // The node joined and waits for the round (not a waiting node of a running job).
  void start();
  // The round formed, or the agent is finishing: no more questions.
  void stop();
  // Logs one answer of the daemon.
  static void report(const rendezvous::membership::Waiting& w);

 private:
  void ask_after(std::chrono::seconds delay);

  boost::asio::steady_timer timer_;
  std::function<void()> ask_;
};

}  // namespace ddp::agent
