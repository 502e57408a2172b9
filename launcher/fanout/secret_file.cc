#include "launcher/fanout/secret_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ddp::launcher::fanout {

SecretFile::~SecretFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

Result<std::string> write_secret_file(const std::string& dir, const std::string& secret) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string path =
        dir + "/.ddprun-secret-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) {
      return io_error("cannot write the job's secret file in " + dir + ": " + std::strerror(errno) +
                      "; start ddprun in a writable directory the nodes share");
    }
    const std::string line = secret + "\n";
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    if (!ok) {
      ::unlink(path.c_str());
      return io_error("cannot write the job's secret file " + path);
    }
    return path;
  }
  return io_error("cannot create a job secret file in " + dir +
                  "; remove stale .ddprun-secret-* files");
}

}  // namespace ddp::launcher::fanout
