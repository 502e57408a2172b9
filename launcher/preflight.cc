#include "launcher/preflight.h"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <system_error>

namespace ddp::launcher {
namespace {

bool is_executable_file(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

Status check_command(Invocation& invocation, const std::string& path_env) {
  std::string& command = invocation.config.worker_argv.front();
  bool python = invocation.python.has_value();
  auto found = find_executable(command, path_env);
  if (found) {
    command = found->string();
    return Status::ok();
  }
  std::error_code ec;
  bool exists = std::filesystem::exists(command, ec);
  std::string why = exists ? " is not an executable file" : " was not found";
  if (command.find('/') == std::string::npos) why += " on PATH";
  if (python) {
    return invalid_argument("Python interpreter '" + command + "'" + why +
                            "; install it or name one with --python or DDPRUN_PYTHON=/path");
  }
  return invalid_argument("program '" + command + "'" + why +
                          (exists ? "; chmod +x it, or drop --no-python for a Python script"
                                  : "; check the name, or give its path"));
}

Status check_script(const std::string& script) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(script, ec)) {
    return invalid_argument("Python script '" + script +
                            "' was not found; check the path, or "
                            "add --no-python to run a program, -m to run a module");
  }
  std::ifstream in(script, std::ios::binary);
  std::array<char, 4> magic{};
  if (in.read(magic.data(), magic.size()) && magic == std::array<char, 4>{'\x7f', 'E', 'L', 'F'}) {
    return invalid_argument("'" + script + "' is a compiled program, not a Python script; add " +
                            "--no-python to run it directly");
  }
  return Status::ok();
}

Status check_log_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir, ec)) {
    return invalid_argument("--log-dir " + dir.string() + " cannot be created (" +
                            (ec ? ec.message() : std::string("not a directory")) +
                            "); choose a writable directory");
  }
  std::string probe = (dir / ".ddprun-probe-XXXXXX").string();
  int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    std::string why = std::error_code(errno, std::generic_category()).message();
    return invalid_argument("--log-dir " + dir.string() + " is not writable (" + why +
                            "); choose a writable directory");
  }
  ::close(fd);
  std::filesystem::remove(probe, ec);
  return Status::ok();
}

}  // namespace

std::optional<std::filesystem::path> find_executable(const std::string& command,
                                                     const std::string& path_env) {
  if (command.empty()) return std::nullopt;
  if (command.find('/') != std::string::npos) {
    if (is_executable_file(command)) return std::filesystem::path(command);
    return std::nullopt;
  }
  std::size_t start = 0;
  while (start <= path_env.size()) {
    std::size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    std::filesystem::path dir = path_env.substr(start, end - start);
    auto candidate = (dir.empty() ? std::filesystem::path(".") : dir) / command;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

Status preflight(Invocation& invocation, const std::string& path_env) {
  if (invocation.config.worker_argv.empty()) return internal_error("preflight: empty command");
  if (Status s = check_command(invocation, path_env); !s) return s;
  if (invocation.script) {
    if (Status s = check_script(*invocation.script); !s) return s;
  }
  if (invocation.config.log_dir) return check_log_dir(*invocation.config.log_dir);
  return Status::ok();
}

}  // namespace ddp::launcher
