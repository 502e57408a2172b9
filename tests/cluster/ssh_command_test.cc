// ssh command lines: flags, environment forwarding, and quoting proven by running the remote
// command string through real POSIX shells and checking what the program received.
#include "launcher/cluster/ssh_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "launcher/cluster/shell_quote.h"
#include "tests/catch.h"
#include "tests/cluster/run_shell.h"
#include "tests/skip.h"

using namespace ddp::launcher::cluster;
using ddp::launcher::cluster::testing::run_shell;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_nul(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\0', start);
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::vector<std::string> shells() {
  std::vector<std::string> out;
  for (const char* shell : {"/bin/sh", "/bin/dash", "/bin/bash"}) {
    if (access(shell, X_OK) == 0) out.emplace_back(shell);
  }
  return out;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("ddp-cluster-" + std::to_string(getpid())) / name;
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path.parent_path(), ignored);
  }
};

}  // namespace

TEST_CASE("shell_quote leaves plain words bare and quotes the rest", "[cluster][ssh]") {
  CHECK(shell_quote("train.py") == "train.py");
  CHECK(shell_quote("--lr=0.1") == "'--lr=0.1'");
  CHECK(shell_quote("/a/b-c_d:e,f@g%h+i") == "/a/b-c_d:e,f@g%h+i");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("~") == "'~'");
  CHECK(shell_join({"a", "b c", ""}) == "a 'b c' ''");
}

TEST_CASE("hostile arguments reach the program intact through sh -c", "[cluster][ssh]") {
  TempDir dir("cwd with space 'q' $x");
  fs::path canary = dir.path / "pwned";
  const std::vector<std::string> hostile = {"plain",
                                            "with space",
                                            "it's",
                                            "\"double\"",
                                            "$HOME",
                                            "${HOME}",
                                            "$(touch " + canary.string() + ")",
                                            "`touch " + canary.string() + "`",
                                            "a;b",
                                            "a && b",
                                            "a | b",
                                            "line1\nline2",
                                            "",
                                            "*",
                                            "~",
                                            "~root",
                                            "\\",
                                            "\\n",
                                            "-n",
                                            "--",
                                            "!x",
                                            "{a,b}",
                                            "#c",
                                            "tab\there",
                                            "é ü 漢",
                                            "%s",
                                            "'",
                                            "''",
                                            "'\"'\"'",
                                            "> out",
                                            "a=b",
                                            "\r\n",
                                            "trailing space "};
  std::vector<std::string> argv{"/usr/bin/printf", "%s\\0"};
  argv.insert(argv.end(), hostile.begin(), hostile.end());
  auto command = remote_command_line(dir.path.string(), {}, argv);
  REQUIRE(command);
  for (const auto& shell : shells()) {
    INFO(shell);
    CHECK(split_nul(run_shell(shell, *command)) == hostile);
  }
  CHECK_FALSE(fs::exists(canary));
  CHECK_FALSE(fs::exists(dir.path / "out"));
}

TEST_CASE("the remote command runs in the working directory with the forwarded variables",
          "[cluster][ssh]") {
  TempDir dir("work dir; $(x) 'q'");
  std::vector<std::pair<std::string, std::string>> env = {
      {"DDP_TEST_A", "value with 'quotes' and $dollar"},
      {"DDP_TEST_B", "line1\nline2"},
      {"DDP_TEST_EMPTY", ""}};
  auto command = remote_command_line(dir.path.string(), env,
                                     {"/bin/sh", "-c",
                                      "pwd -P; printf '%s\\0' \"$DDP_TEST_A\" \"$DDP_TEST_B\" "
                                      "\"${DDP_TEST_EMPTY-unset}\"",
                                      "ignored $0"});
  REQUIRE(command);
  CHECK(command->rfind("cd ", 0) == 0);
  CHECK(command->find(" && exec env ") != std::string::npos);
  for (const auto& shell : shells()) {
    INFO(shell);
    std::string out = run_shell(shell, *command);
    auto newline = out.find('\n');
    REQUIRE(newline != std::string::npos);
    CHECK(out.substr(0, newline) == fs::canonical(dir.path).string());
    CHECK(split_nul(out.substr(newline + 1)) ==
          std::vector<std::string>{"value with 'quotes' and $dollar", "line1\nline2", ""});
  }
}

TEST_CASE("remote command line checks its inputs", "[cluster][ssh]") {
  CHECK_FALSE(remote_command_line("relative/dir", {}, {"ddprun"}));
  CHECK_FALSE(remote_command_line("/tmp", {}, {}));
  auto eq = remote_command_line("/tmp", {{"A", "1"}}, {"/opt/x=y/ddprun"});
  REQUIRE_FALSE(eq);
  CHECK_THAT(eq.status().message(), Catch::Contains("contains '='"));
  CHECK(remote_command_line("/tmp", {}, {"/opt/x=y/ddprun"}));  // no env: no ambiguity
  CHECK_FALSE(remote_command_line("/tmp", {{"BAD-NAME", "1"}}, {"ddprun"}));
}

TEST_CASE("ssh argv: batch mode, port, identity, user, then -- host command", "[cluster][ssh]") {
  using Argv = std::vector<std::string>;
  auto plain = ssh_argv({}, "node1", "cd /w && exec ddprun x");
  REQUIRE(plain);
  CHECK(*plain == Argv{"ssh", "-o", "BatchMode=yes", "--", "node1", "cd /w && exec ddprun x"});
  auto command = parse_ssh_command("  /usr/bin/ssh -F /etc/ssh/cluster_config ");
  REQUIRE(command);
  SshSettings settings{*command, 2222, "/home/u/.ssh/id_ed25519", "trainer"};
  auto full = ssh_argv(settings, "fd00::2", "true");
  REQUIRE(full);
  CHECK(*full == Argv{"/usr/bin/ssh", "-F", "/etc/ssh/cluster_config", "-o", "BatchMode=yes", "-p",
                      "2222", "-i", "/home/u/.ssh/id_ed25519", "-l", "trainer", "--", "fd00::2",
                      "true"});
  CHECK_FALSE(ssh_argv({}, "-oProxyCommand=evil", "true"));
  CHECK_FALSE(parse_ssh_command("   "));
  CHECK_FALSE(parse_ssh_command("ssh -o 'User=x'"));
}

TEST_CASE("forward-env option: names and prefixes select variables", "[cluster][ssh]") {
  auto patterns = parse_forward_env("NCCL_*,PYTHONPATH,X");
  REQUIRE(patterns);
  Environment env{{"NCCL_DEBUG", "INFO"}, {"NCCL_IB_HCA", "mlx5"}, {"NCCLX", "no"},
                  {"PYTHONPATH", "/src"}, {"PYTHONPATHX", "no"},   {"HOME", "/home/u"}};
  auto selected = forwarded_environment(*patterns, env);
  CHECK(selected == std::vector<std::pair<std::string, std::string>>{
                        {"NCCL_DEBUG", "INFO"}, {"NCCL_IB_HCA", "mlx5"}, {"PYTHONPATH", "/src"}});
  // A job secret never goes into the remote command line (argv), whatever the patterns say.
  auto all_ddprun = parse_forward_env("DDPRUN_*");
  REQUIRE(all_ddprun);
  CHECK(
      forwarded_environment(*all_ddprun, {{"DDPRUN_SECRET", "s"}, {"DDPRUN_LOG_LEVEL", "info"}}) ==
      std::vector<std::pair<std::string, std::string>>{{"DDPRUN_LOG_LEVEL", "info"}});
  auto none = parse_forward_env("");
  REQUIRE(none);
  CHECK(forwarded_environment(*none, env).empty());
  auto defaults = parse_forward_env(kDefaultForwardEnv);
  REQUIRE(defaults);
  CHECK(defaults->size() == 7);
  for (const char* bad : {"1ABC", "A-B", "A,,B", "*", "A*B"}) {
    INFO(bad);
    auto r = parse_forward_env(bad);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.status().message(), Catch::Contains("--forward-env"));
  }
}

TEST_CASE("the real OpenSSH client reads our argv as intended (ssh -G)", "[cluster][ssh]") {
  if (access("/usr/bin/ssh", X_OK) != 0) {
    ddp::testing::skip("/usr/bin/ssh is not installed (Debian openssh-client)");
  }
  TempDir dir("keys");
  fs::path identity = dir.path / "id_test";
  std::ofstream(identity) << "not a real key; ssh -G only records the path\n";
  // -G prints the resulting configuration and exits without connecting; -F /dev/null keeps
  // the user's ~/.ssh/config out of it.
  SshSettings settings{
      {"/usr/bin/ssh", "-F", "/dev/null", "-G"}, 2222, identity.string(), "trainer"};
  auto argv = ssh_argv(settings, "gpu-node-7", "cd /w && exec ddprun train.py");
  REQUIRE(argv);
  std::string command;
  for (const auto& word : *argv) command += shell_quote(word) + " ";
  std::string out = run_shell("/bin/sh", command + "2>/dev/null");
  auto lower = [](const std::string& text) {
    std::string low;
    for (char c : text) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return low;
  };
  std::string config = lower(out);  // ssh -G spells some keys in capitals ("User")
  CHECK_THAT(config, Catch::Contains("\nhostname gpu-node-7\n"));
  CHECK_THAT(config, Catch::Contains("\nport 2222\n"));
  CHECK_THAT(config, Catch::Contains("user trainer\n"));
  CHECK_THAT(config, Catch::Contains("\nbatchmode yes\n"));
  CHECK_THAT(config, Catch::Contains("\nidentityfile " + lower(identity.string()) + "\n"));
}
