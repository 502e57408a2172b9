// Preflight: command lookup, script and log directory checks against a scratch directory.
#include "launcher/preflight.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/catch.h"

using namespace ddp::launcher;
namespace fs = std::filesystem;

namespace {

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("ddprun-preflight-" + std::to_string(::getpid()));
  Scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir / "bin");
  }
  ~Scratch() { fs::remove_all(dir); }
  fs::path file(const std::string& name, const std::string& text, bool executable) {
    fs::path p = dir / name;
    std::ofstream(p) << text;
    fs::permissions(
        p, executable ? fs::perms::owner_all : fs::perms::owner_read | fs::perms::owner_write);
    return p;
  }
};

Invocation python_run(const std::string& script) {
  Invocation inv;
  inv.python = "python3";
  inv.script = script;
  inv.config.worker_argv = {"python3", "-u", script};
  return inv;
}

Invocation native_run(const std::string& program) {
  Invocation inv;
  inv.config.worker_argv = {program};
  return inv;
}

}  // namespace

TEST_CASE("find_executable searches PATH like a shell", "[launcher]") {
  Scratch s;
  fs::path tool = s.file("bin/tool", "#!/bin/sh\n", true);
  s.file("bin/plain", "", false);
  std::string path = "/nonexistent:" + (s.dir / "bin").string();
  CHECK(find_executable("tool", path) == tool);
  CHECK_FALSE(find_executable("plain", path));
  CHECK_FALSE(find_executable("missing", path));
  CHECK(find_executable(tool.string(), "") == tool);
  CHECK_FALSE(find_executable("bin", s.dir.string()));  // a directory is not a program
}

TEST_CASE("preflight resolves the command and checks the script", "[launcher]") {
  Scratch s;
  fs::path py = s.file("bin/python3", "#!/bin/sh\n", true);
  fs::path script = s.file("train.py", "print(1)\n", false);
  std::string path = (s.dir / "bin").string();

  auto good = python_run(script.string());
  REQUIRE(preflight(good, path));
  CHECK(good.config.worker_argv[0] == py.string());

  auto no_python = python_run(script.string());
  auto missing = preflight(no_python, "/nonexistent");
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.message(), Catch::Contains("Python interpreter 'python3' was not found on "
                                                "PATH") &&
                                    Catch::Contains("DDPRUN_PYTHON"));

  auto typo = python_run((s.dir / "trian.py").string());
  CHECK_THAT(preflight(typo, path).message(), Catch::Contains("was not found"));

  fs::path elf = s.file("a.out",
                        std::string("\x7f"
                                    "ELF rest",
                                    8),
                        true);
  auto compiled = python_run(elf.string());
  CHECK_THAT(preflight(compiled, path).message(), Catch::Contains("add --no-python"));
}

TEST_CASE("preflight checks --no-python programs", "[launcher]") {
  Scratch s;
  fs::path tool = s.file("bin/tool", "#!/bin/sh\n", true);
  fs::path plain = s.file("plain", "", false);
  std::string path = (s.dir / "bin").string();
  auto ok = native_run("tool");
  REQUIRE(preflight(ok, path));
  CHECK(ok.config.worker_argv[0] == tool.string());
  auto missing = native_run("nope");
  CHECK_THAT(preflight(missing, path).message(),
             Catch::Contains("program 'nope' was not found on PATH"));
  auto not_exec = native_run(plain.string());
  CHECK_THAT(preflight(not_exec, path).message(), Catch::Contains("not an executable file"));
}

TEST_CASE("preflight creates the log directory and refuses unusable ones", "[launcher]") {
  Scratch s;
  s.file("bin/tool", "#!/bin/sh\n", true);
  std::string path = (s.dir / "bin").string();
  auto fresh = native_run("tool");
  fresh.config.log_dir = s.dir / "logs" / "deep";
  REQUIRE(preflight(fresh, path));
  CHECK(fs::is_directory(s.dir / "logs" / "deep"));
  CHECK(fs::is_empty(s.dir / "logs" / "deep"));  // the probe file is gone

  fs::path blocker = s.file("blocker", "", false);
  auto blocked = native_run("tool");
  blocked.config.log_dir = blocker / "logs";
  auto status = preflight(blocked, path);
  REQUIRE_FALSE(status);
  CHECK(status.code() == ddp::ErrorCode::kInvalidArgument);
  CHECK_THAT(status.message(),
             Catch::Contains("--log-dir") && Catch::Contains("cannot be created"));
  auto file_as_dir = native_run("tool");
  file_as_dir.config.log_dir = blocker;
  CHECK_FALSE(preflight(file_as_dir, path));
}
