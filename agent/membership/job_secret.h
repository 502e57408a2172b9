// Where a multi-node agent's job secret comes from (job secrets, docs/security.md):
// `--rdzv-conf secret_file=PATH` (the file's bytes, one trailing newline dropped), else the
// environment variable DDPRUN_SECRET. Neither: no secret (the job runs as before).
//
// The file must be readable by its owner only: a file readable or writable by group or others is
// refused ("... run chmod 600 PATH"). A secret shorter than 16 bytes is refused. DDPRUN_SECRET is
// removed from this process's environment once read, so the workers never inherit it.
//
// Threading: the agent's main thread, before anything else reads the environment.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace ddp::agent {

inline constexpr const char* kSecretVariable = "DDPRUN_SECRET";

// Errors: kInvalidArgument naming the file or variable and the fix; kIo when the file cannot be
// read.
Result<std::optional<std::string>> load_job_secret(const std::optional<std::string>& secret_file);
// --secret-from-stdin: the first line of fd `fd`, read byte by byte so nothing after it is
// consumed (the stdin watch reads the rest). Errors: kInvalidArgument when stdin ends first, the
// line runs past 4 KiB, or the secret is shorter than 16 bytes.
Result<std::optional<std::string>> read_secret_line(int fd);

}  // namespace ddp::agent
