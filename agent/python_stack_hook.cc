#include "agent/python_stack_hook.h"

#include <fstream>

namespace ddp::agent {
namespace {

constexpr const char* kHook =
    R"PY(# Written by ddprun: lets the agent take this worker's stacks when it hangs. faulthandler
# dumps every thread's traceback into the agent's stack channel on DDPRUN_STACK_SIGNAL.
def _ddprun_stack_hook():
    import faulthandler, fcntl, os, runpy, sys
    here = os.path.dirname(os.path.abspath(__file__))
    sig = int(os.environ.get("DDPRUN_STACK_SIGNAL", "0") or "0")
    path = os.environ.get("DDPRUN_STACK_FILE", "")
    if sig > 0 and path:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            faulthandler.register(sig, file=fd, all_threads=True, chain=False)
        except (OSError, ValueError, RuntimeError):
            pass
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    for entry in sys.path:
        other = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.isfile(other):
            runpy.run_path(other, run_name="sitecustomize")
            break


_ddprun_stack_hook()
del _ddprun_stack_hook
)PY";

}  // namespace

Status write_python_stack_hook(const std::filesystem::path& dir) {
  const auto file = dir / "sitecustomize.py";
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << kHook;
  out.close();
  if (!out) return io_error("cannot write " + file.string());
  return Status::ok();
}

}  // namespace ddp::agent
