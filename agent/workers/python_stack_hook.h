// The startup hook of Python workers: a `sitecustomize.py` in a directory the agent puts first
// on the workers' PYTHONPATH (Python's site module imports it at startup). Two jobs:
//  - stacks (stack_capture.h): with DDPRUN_STACK_SIGNAL and DDPRUN_STACK_FILE set (hang detection
//    or torchrun's file timer) it registers faulthandler for that signal, writing every thread's
//    traceback to that FIFO; a worker whose FIFO is gone, or without those variables, is left
//    alone;
//  - a PyTorch >= 2.2 built without libuv (Debian 13's 2.6): torch makes the worker's client of
//    the agent's store with use_libuv=True, which such a build refuses; the hook patches
//    torch.distributed.rendezvous as it is imported (an import finder; torch is never imported
//    by the hook) so that, after that refusal, the client is made with use_libuv=False. On other
//    builds torch's code runs unchanged (docs/pytorch2.md).
// It then runs the user's own sitecustomize.py if one is further down the path.
//
// Every Python worker gets the hook (a program named python*, or a wrapper with python in its
// name).
#pragma once

#include <filesystem>

#include "common/status.h"

namespace ddp::agent {

// Writes sitecustomize.py into `dir` (which must exist). Errors: kIo naming the file.
Status write_python_stack_hook(const std::filesystem::path& dir);

}  // namespace ddp::agent
