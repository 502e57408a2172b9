#include "proc/stray_reaper.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <boost/process/v2/process_handle.hpp>
#include <filesystem>
#include <fstream>

#include "proc/process_wait.h"

namespace ddp::proc {

namespace bp = boost::process::v2;

struct StrayReaper::Waiter {
  explicit Waiter(bp::basic_process_handle<>&& h) : handle(std::move(h)) {}
  bp::basic_process_handle<> handle;  // owns the pidfd
  bp::native_exit_code_type status = 0;
  bool abandoned = false;  // the reaper is gone: reap, report nothing
};

StrayReaper::~StrayReaper() {
  for (auto& [pid, waiter] : waiting_) waiter->abandoned = true;
}

void StrayReaper::adopt(pid_t pid) {
  if (waiting_.contains(pid)) return;
  std::shared_ptr<Waiter> waiter;
  try {
    waiter = std::make_shared<Waiter>(bp::basic_process_handle<>(io_.get_executor(), pid));
  } catch (const boost::system::system_error& e) {
    // No pidfd (the process is gone or reaped already, or no descriptors are left).
    spdlog::debug("cannot wait for process {}: {}", pid, e.what());
    return;
  }
  waiting_[pid] = waiter;
  // The handle's wait ends with waitpid(pid): that reaps it.
  async_wait_exit(waiter->handle, waiter->status,
                  [this, waiter, pid](boost::system::error_code, int) {
                    if (waiter->abandoned) return;
                    waiting_.erase(pid);
                  });
}

void StrayReaper::kill_all_except(const std::function<bool(pid_t)>& keep) {
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "children");
    pid_t pid = 0;
    while (in >> pid) {
      if (keep(pid)) continue;
      // Unreaped, the pid cannot be reused: it is still this stray when the signal goes out.
      ::kill(pid, SIGKILL);
      adopt(pid);
    }
  }
}

}  // namespace ddp::proc
