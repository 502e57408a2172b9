// The job secret of a pbsdsh fan-out, handed to the agents as a file: pbsdsh tasks get neither
// the launcher's stdin nor its environment, and argv is visible to every user (ps). The file is
// created owner-only (0600, O_EXCL) in the job's working directory, which the nodes share (the
// agents start there), and removed when the launcher ends. ssh agents read the secret from
// stdin instead (node_launches.h).
//
// Threading: the launcher's thread.
#pragma once

#include <string>

#include "common/status.h"

namespace ddp::launcher::fanout {

// Removes the file when destroyed. Move-only.
class SecretFile {
 public:
  explicit SecretFile(std::string path) : path_(std::move(path)) {}
  ~SecretFile();
  SecretFile(SecretFile&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  SecretFile& operator=(SecretFile&&) = delete;
  SecretFile(const SecretFile&) = delete;
  SecretFile& operator=(const SecretFile&) = delete;

 private:
  std::string path_;
};

// Writes `secret` and a newline to a new file DIR/.ddprun-secret-PID-N; returns its path.
// Errors: kIo naming the directory and the fix.
Result<std::string> write_secret_file(const std::string& dir, const std::string& secret);

}  // namespace ddp::launcher::fanout
