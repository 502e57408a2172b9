#include "proc/child_setup.h"

#include <linux/close_range.h>
#include <linux/mempolicy.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace ddp::proc {
namespace {

int fail() {
  const int err = errno;
  return err != 0 ? err : EINVAL;
}

}  // namespace

int prepare_child(const ChildSetup& setup) noexcept {
  const int joined =
      setup.group == GroupMode::kNewSession ? static_cast<int>(::setsid()) : ::setpgid(0, 0);
  if (joined < 0) return fail();
  if (setup.die_with_parent) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return fail();
    if (::getppid() != setup.parent) ::_exit(127);  // the parent died before prctl took effect
  }
  const int fds[3] = {setup.stdin_fd, setup.stdout_fd, setup.stderr_fd};
  for (int target = 0; target < 3; ++target) {
    if (::dup2(fds[target], target) < 0) return fail();
  }
  // The parent may ignore SIGPIPE and Asio has handlers; exec resets caught signals but keeps
  // ignored ones and the mask, so restore the defaults, then unblock (the spawner blocked all).
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  if (setup.ignored_signal > 0 && setup.ignored_signal < NSIG) {
    ::signal(setup.ignored_signal, SIG_IGN);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Nothing else of the parent leaks into the program (store sockets, other children's pipes,
  // the pidfds); Boost.Process's error pipe is close-on-exec already and stays usable.
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) return fail();
  if (setup.open_file_soft_limit != 0) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return fail();
    if (setup.open_file_soft_limit < limit.rlim_max) limit.rlim_cur = setup.open_file_soft_limit;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return fail();
  }
  if (setup.cpu_affinity != nullptr &&
      ::sched_setaffinity(0, sizeof(cpu_set_t), setup.cpu_affinity) != 0) {
    return fail();
  }
  if (setup.memory_nodes != nullptr) {
    // maxnode + 1: the kernel reads one bit fewer than it is told (numactl does the same).
    auto set = [&](int mode) {
      return ::syscall(SYS_set_mempolicy, mode, setup.memory_nodes, setup.memory_maxnode + 1);
    };
    long set_ok = set(setup.several_memory_nodes ? MPOL_PREFERRED_MANY : MPOL_PREFERRED);
    if (set_ok != 0 && errno == EINVAL && setup.several_memory_nodes) set_ok = set(MPOL_PREFERRED);
    if (set_ok != 0) return fail();
  }
  if (setup.forced_errno != 0) {
    errno = setup.forced_errno;
    return setup.forced_errno;
  }
  return 0;
}

}  // namespace ddp::proc
