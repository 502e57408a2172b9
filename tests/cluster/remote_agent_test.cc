// The remote agent's command line end to end: options parsed by ddprun become the agent
// arguments, the ssh remote command is built from them, and running that command through
// /bin/sh (what sshd does with it on the remote host) starts the real ddprun, whose workers
// receive hostile program arguments byte for byte and the forwarded variables.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "launcher/cluster/ssh_command.h"
#include "launcher/options.h"
#include "tests/catch.h"
#include "tests/launcher/fake_gpu_inventory.h"

using namespace ddp::launcher;
namespace fs = std::filesystem;

namespace {

Invocation parse_ok(const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& env) {
  FakeGpuInventory inventory(0);
  LaunchEnvironment environment{env, &inventory, 2, "run-1"};
  environment.hostname = "this-host";
  auto r = parse_command_line(args, environment);
  INFO(r.status().to_string());
  REQUIRE(r);
  return std::move(r).value();
}

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

}  // namespace

TEST_CASE("agent arguments: given options as --name=value, launcher-only ones left behind",
          "[cluster][agent_args]") {
  auto inv =
      parse_ok({"--hosts", "localhost:2", "--ssh-port", "2222", "--forward-env", "A", "--tee", "3",
                "--standalone", "--max_restarts=2", "train.py", "--lr", "0.1", "--hosts", "x"},
               {{"PET_ROLE", "trainer"}, {"PET_VIRTUAL_LOCAL_RANK", "0"}});
  CHECK(inv.launch.agent_args == std::vector<std::string>{"--max-restarts=2", "--role=trainer",
                                                          "--standalone", "--tee=3", "train.py",
                                                          "--lr", "0.1", "--hosts", "x"});
  CHECK(parse_ok({"train.py"}, {}).launch.agent_args.empty());  // local launch: none
}

TEST_CASE("a remote agent command run through sh starts ddprun with arguments intact",
          "[cluster][agent_args]") {
  fs::path root = fs::temp_directory_path() / ("ddp-remote-" + std::to_string(getpid()));
  fs::path cwd = root / "remote cwd 'q' $HOME";
  fs::path out = root / "out";
  fs::create_directories(cwd);
  fs::create_directories(out);
  const std::vector<std::string> hostile = {
      "with space", "it's",   "\"dq\"", "$HOME", "$(touch " + (root / "pwned").string() + ")",
      "a;b",        "l1\nl2", "",       "*",     "--nproc-per-node=9",
      "-m",         "\\",     "tab\t",  "é"};
  std::vector<std::string> args = {"--hosts",
                                   "localhost",
                                   "--forward-env",
                                   "DDP_REMOTE_*",
                                   "--nproc-per-node",
                                   "2",
                                   "--no-python",
                                   "/bin/sh",
                                   "-c",
                                   "printf '%s\\0' \"$@\" > \"$DDP_REMOTE_OUT/rank$RANK\"",
                                   "sh"};
  args.insert(args.end(), hostile.begin(), hostile.end());
  std::map<std::string, std::string> env = {{"DDP_REMOTE_OUT", out.string()},
                                            {"DDP_OTHER", "not forwarded"}};
  auto inv = parse_ok(args, env);
  REQUIRE(inv.launch.kind == LaunchPlan::Kind::kSsh);

  std::vector<std::string> agent{DDP_TEST_DDPRUN};
  agent.insert(agent.end(), inv.launch.agent_args.begin(), inv.launch.agent_args.end());
  auto forwarded = ddp::launcher::cluster::forwarded_environment(inv.launch.forward_env, env);
  REQUIRE(forwarded.size() == 1);
  auto remote = ddp::launcher::cluster::remote_command_line(cwd.string(), forwarded, agent);
  REQUIRE(remote);
  auto ssh = ddp::launcher::cluster::ssh_argv(inv.launch.ssh, "localhost", *remote);
  REQUIRE(ssh);
  CHECK(ssh->back() == *remote);

  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(60);  // the deadline: SIGALRM ends a hung ddprun (its workers die with it)
    const char* clean_env[] = {"PATH=/usr/bin:/bin", nullptr};
    execle("/bin/sh", "sh", "-c", remote->c_str(), static_cast<char*>(nullptr), clean_env);
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("remote command: " << *remote);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  for (int rank : {0, 1}) {
    std::ifstream in(out / ("rank" + std::to_string(rank)), std::ios::binary);
    REQUIRE(in);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(split_nul(text) == hostile);
  }
  CHECK_FALSE(fs::exists(root / "pwned"));
  fs::remove_all(root);
}
