// The startup hook of Python workers: a `sitecustomize.py` in a directory the agent puts first
// on the workers' PYTHONPATH (Python's site module imports it at startup). Two jobs:
//  - stacks (stack_capture.h): with DDPRUN_STACK_SIGNAL and DDPRUN_STACK_FILE set (hang detection
//    or torchrun's file timer) it registers faulthandler for that signal, writing every thread's
//    traceback to that FIFO; a worker whose FIFO is gone, or without those variables, is left
//    alone;
//  - PyTorch >= 2.2 makes the worker's client of the agent's store with use_libuv=True, which a
//    build without libuv (Debian's 2.6 and 2.14) refuses; the hook patches
//    torch.distributed.rendezvous as it is imported (an import finder; torch is never imported
//    by the hook) so that on such a build, told by a loopback server it starts once with
//    use_libuv=True, this one client is made with use_libuv=False (docs/pytorch2.md); before
//    2.2, where there is no use_libuv, it copies TORCH_NCCL_ASYNC_ERROR_HANDLING to
//    NCCL_ASYNC_ERROR_HANDLING, the only name that NCCL reads there.
// It then runs the user's own sitecustomize.py if one is further down the path.
//
// Every Python worker gets the hook (AgentConfig::python_workers).
#pragma once

#include <filesystem>

#include "common/status.h"

namespace ddp::agent {

// Writes sitecustomize.py into `dir` (which must exist). Errors: kIo naming the file.
Status write_python_stack_hook(const std::filesystem::path& dir);

}  // namespace ddp::agent
