// The startup hook that lets the agent take a Python worker's stacks (stack_capture.h): a
// `sitecustomize.py` in a directory the agent puts first on the workers' PYTHONPATH (Python's
// site module imports it at startup). It registers faulthandler for DDPRUN_STACK_SIGNAL, writing
// every thread's traceback to the FIFO named by DDPRUN_STACK_FILE, then runs the user's own
// sitecustomize.py if one is further down the path. Nothing else changes in the worker; a
// worker whose FIFO is gone (or that runs without those variables) is left alone.
//
// Only jobs with hang detection or torchrun's file timer get the hook.
#pragma once

#include <filesystem>

#include "common/status.h"

namespace ddp::agent {

// Writes sitecustomize.py into `dir` (which must exist). Errors: kIo naming the file.
Status write_python_stack_hook(const std::filesystem::path& dir);

}  // namespace ddp::agent
