#include "agent/membership/job_secret.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "rendezvous/auth/auth.h"

namespace ddp::agent {
namespace {

Status check_length(const std::string& secret, const std::string& where) {
  if (secret.size() < rendezvous::auth::kMinSecretBytes) {
    return invalid_argument(where + " holds " + std::to_string(secret.size()) +
                            " bytes; a job secret needs at least " +
                            std::to_string(rendezvous::auth::kMinSecretBytes) +
                            " (e.g. head -c 32 /dev/urandom | xxd -p -c 64)");
  }
  return Status::ok();
}

Result<std::string> read_secret_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return io_error("cannot open --rdzv-conf secret_file " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("--rdzv-conf secret_file " + path + " is not a regular file");
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    ::close(fd);
    return invalid_argument("secret file " + path +
                            " is accessible by group or others; run chmod 600 " + path);
  }
  std::string secret;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error("cannot read secret file " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    secret.append(buffer, static_cast<std::size_t>(n));
    if (secret.size() > (std::size_t{1} << 16)) {
      ::close(fd);
      return invalid_argument("secret file " + path + " is larger than 64 KiB; use 32 bytes");
    }
  }
  ::close(fd);
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  return secret;
}

}  // namespace

Result<std::optional<std::string>> load_job_secret(const std::optional<std::string>& secret_file) {
  std::optional<std::string> secret;
  std::string where;
  if (secret_file) {
    auto read = read_secret_file(*secret_file);
    if (!read) return read.status();
    secret = std::move(read).value();
    where = "secret file " + *secret_file;
  } else if (const char* value = std::getenv(kSecretVariable); value != nullptr) {
    secret = value;
    where = kSecretVariable;
  }
  ::unsetenv(kSecretVariable);  // never inherited by the workers
  if (!secret) return std::optional<std::string>();
  if (Status s = check_length(*secret, where); !s) return s;
  return secret;
}

Result<std::optional<std::string>> read_secret_line(int fd) {
  std::string line;
  for (;;) {
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || line.size() > 4096) {
      return invalid_argument(
          "--secret-from-stdin: stdin ended before a secret line came; it "
          "is set only by the launching ddprun of an ssh fan-out");
    }
    if (c == '\n') break;
    line.push_back(c);
  }
  if (Status s = check_length(line, "the secret on stdin"); !s) return s;
  return std::optional<std::string>(std::move(line));
}

}  // namespace ddp::agent
