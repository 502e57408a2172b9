// Test helper: run `shell -c command` as a child (as sshd runs a remote command through the
// login shell) and return its stdout; REQUIREs that it exits 0. A 60 s alarm in the child is
// the deadline for a command that hangs.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tests/catch.h"

namespace ddp::launcher::cluster::testing {

inline std::string run_shell(const std::string& shell, const std::string& command) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(60);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(shell.c_str(), shell.c_str(), "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO(shell << " -c " << command);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return out;
}

}  // namespace ddp::launcher::cluster::testing
