// The worker command line: whether it runs Python, and torchrun's `${local_rank}` macro.
// torchelastic passes every worker argument through Python's
// string.Template(arg).safe_substitute(local_rank=N), so
// `$local_rank` and `${local_rank}` become the worker's local rank, `$$` becomes `$`, and any
// other `$` text is left as it is. ddprun does the same, which is also how
// `--local-rank-arg` (torch.distributed.launch's `--local_rank=<n>`) reaches each worker: the
// launcher adds `--local_rank=${local_rank}` to the command. Pure; any thread.
#pragma once

#include <string>
#include <vector>

namespace ddp::agent {

// Whether a command given with --no-python is Python all the same: argv[0]'s file name contains
// "python" (python3, python3.11, a venv's). AgentConfig::python_workers is what decides.
bool runs_python(const std::vector<std::string>& argv);

// The macro torchrun substitutes (torch.distributed.elastic.utils.api.macros.local_rank).
inline constexpr const char* kLocalRankMacro = "${local_rank}";

// One argument with the macro replaced, Template.safe_substitute's rules.
std::string substitute_local_rank(const std::string& arg, int local_rank);

// Every argument of argv, as above.
std::vector<std::string> substitute_local_rank(const std::vector<std::string>& argv,
                                               int local_rank);

}  // namespace ddp::agent
