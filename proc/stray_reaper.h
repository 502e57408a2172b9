// Reaps children of this process that no one else waits for: grandchildren re-parented here
// (the agent is a child subreaper) and children whose exec failed when the caller wanted an
// error instead of an exit. Each one is waited for through its pidfd on the io_context
// (Boost.Process's async_wait), never with waitpid(-1): proc::Spawner waits for its live
// children by pid, and the two sets never overlap, so exactly one waiter owns each exit.
//
// Threading: the io_context's single thread. A reap still pending when this object goes
// away still happens (when the process exits, while the io_context runs) but is not reported.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>

namespace ddp::proc {

class StrayReaper {
 public:
  explicit StrayReaper(boost::asio::io_context& io) : io_(io) {}
  ~StrayReaper();
  StrayReaper(const StrayReaper&) = delete;
  StrayReaper& operator=(const StrayReaper&) = delete;

  // Reaps `pid`, a child of this process that no one else waits for, once it exits.
  void adopt(pid_t pid);
  // SIGKILLs every child of this process for which `keep(pid)` is false and reaps it.
  void kill_all_except(const std::function<bool(pid_t)>& keep);

 private:
  struct Waiter;
  boost::asio::io_context& io_;
  std::map<pid_t, std::shared_ptr<Waiter>> waiting_;
};

}  // namespace ddp::proc
