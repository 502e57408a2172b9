#include "agent/workers/python_stack_hook.h"

#include <fstream>

namespace ddp::agent {
namespace {

constexpr const char* kHook =
    R"PY(# Written by ddprun for its Python workers (agent/python_stack_hook.h):
#  - stacks: faulthandler dumps every thread's traceback into the agent's stack channel on
#    DDPRUN_STACK_SIGNAL (only when the agent set DDPRUN_STACK_SIGNAL and DDPRUN_STACK_FILE);
#  - PyTorch >= 2.2 built without libuv (Debian's 2.6 and 2.14): the worker's client of the
#    agent's store is made with use_libuv=False, which torch's own code does not pass there;
#  - PyTorch < 2.2: NCCL_ASYNC_ERROR_HANDLING from TORCH_NCCL_ASYNC_ERROR_HANDLING.
def _ddprun_hooks():
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
    sys.meta_path.insert(0, _DdprunRendezvousFinder())
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    for entry in sys.path:
        other = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.isfile(other):
            runpy.run_path(other, run_name="sitecustomize")
            break


class _DdprunRendezvousFinder(object):
    """Finds nothing itself: when torch.distributed.rendezvous is imported, lets the other finders
    find it and patches it once it has run, then leaves sys.meta_path. Never imports torch."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch.distributed.rendezvous":
            return None
        import importlib.util, sys
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and hasattr(spec.loader, "exec_module"):
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                _ddprun_patch_rendezvous(module)

            spec.loader.exec_module = exec_module
        return spec


def _ddprun_patch_rendezvous(rdzv):
    # PyTorch >= 2.2: under TORCHELASTIC_USE_AGENT_STORE=True every rank makes a TCPStore client
    # with TCPStore's default use_libuv=True, which a build without libuv (Debian's) refuses
    # before it sends a byte. On such a build the agent store's client is made with
    # use_libuv=False (the same on the wire; only its queue calls are refused, as they are for
    # every client of that build). Everywhere else torch's own function runs, unchanged.
    create = getattr(rdzv, "_create_c10d_store", None)
    if create is None or not hasattr(rdzv, "_get_use_libuv_from_query_dict"):
        # PyTorch < 2.2: no use_libuv, and NCCL reads only the old name of the setting the
        # agent gives under its new name (as torchrun 2.x does).
        import os
        handling = os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING")
        if handling is not None:
            os.environ.setdefault("NCCL_ASYNC_ERROR_HANDLING", handling)
        return
    # Whether torch's own function would make the agent store's client: 2.14 asks that the
    # endpoint be the agent's MASTER_ADDR:MASTER_PORT too; earlier releases only the flag.
    serves = getattr(rdzv, "_agent_store_serves", None)
    libuv = []  # [whether this build has libuv], once known

    def has_libuv():
        # Only a server tells without a peer: a build without libuv refuses use_libuv=True at
        # once. Asked once per process, on a loopback port of its own that is closed at once.
        if not libuv:
            try:
                rdzv.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                              use_libuv=True)
                libuv.append(True)
            except Exception:  # noqa: BLE001 - no libuv, or no loopback: the legacy client
                libuv.append(False)
        return libuv[0]

    def _create_c10d_store(hostname, port, rank, world_size, timeout, *args, **kwargs):
        agent_store = (serves(hostname, port) if serves is not None
                       else rdzv._torchelastic_use_agent_store())
        if not agent_store or has_libuv():
            return create(hostname, port, rank, world_size, timeout, *args, **kwargs)
        if not 0 <= port < 2**16:
            raise ValueError("port must have value from 0 to 65535 but was %d." % port)
        return rdzv.TCPStore(host_name=hostname, port=port, world_size=world_size,
                             is_master=False, timeout=timeout, use_libuv=False)

    rdzv._create_c10d_store = _create_c10d_store


_ddprun_hooks()
del _ddprun_hooks
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
