// The commands a fan-out runs: per-node agent options, ssh command lines, pbsdsh command lines
// for both PBS flavors, parsed from real command lines.
#include "launcher/fanout/node_launches.h"

#include "launcher/cluster/shell_quote.h"
#include "tests/catch.h"
#include "tests/launcher/fake_gpu_inventory.h"

using namespace ddp;
using namespace ddp::launcher;

namespace {

Invocation parse_ok(std::vector<std::string> args, std::map<std::string, std::string> env = {},
                    std::map<std::string, std::string> files = {},
                    const std::string& hostname = "launch") {
  FakeGpuInventory inventory(2);  // `--nproc-per-node gpu` is also checked on the launcher
  LaunchEnvironment environment{env, &inventory, 2, "run-xyz"};
  environment.hostname = hostname;
  environment.cwd = "/work dir";
  environment.read_file = [files](const std::string& path) -> Result<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return io_error("no " + path);
    return it->second;
  };
  auto r = parse_command_line(args, environment);
  INFO(r.status().to_string());
  REQUIRE(r);
  REQUIRE(r->launch.fan_out);
  return std::move(r).value();
}

fanout::FanoutSite site() {
  return {"/opt/ddprun/bin/ddprun", "/work dir", "10.0.0.9:4000", {{"NCCL_DEBUG", "INFO"}}};
}

}  // namespace

TEST_CASE("agent options: rendezvous, node count, slots, local address, stdin lifeline",
          "[fanout]") {
  auto inv = parse_ok({"--hosts", "h1:4,h2", "--nproc-per-node", "gpu", "--rdzv-conf",
                       "join_timeout=60,is_host=true", "--max-restarts", "2", "train.py"});
  CHECK(fanout::agent_options(inv, site(), "h1", 4, true) ==
        std::vector<std::string>{"--launcher=local", "--nnodes=2:2", "--rdzv-backend=c10d",
                                 "--rdzv-endpoint=10.0.0.9:4000", "--rdzv-id=run-xyz",
                                 "--rdzv-conf=join_timeout=60,is_host=false", "--nproc-per-node=4",
                                 "--local-addr=h1", "--exit-on-stdin-eof", "--secret-from-stdin",
                                 "--job-report-by-launcher"});
  // No slots: --nproc-per-node as written (each node resolves "gpu" itself).
  auto h2 = fanout::agent_options(inv, site(), "", 0, false);
  CHECK(h2.end()[-2] == "--nproc-per-node=gpu");
  CHECK(h2.back() == "--job-report-by-launcher");
}

TEST_CASE("agent options of an etcd job: its backend, etcd's endpoints, the conf as given",
          "[fanout]") {
  auto inv = parse_ok({"--hosts", "h1,h2", "--rdzv-backend", "etcd", "--rdzv-endpoint",
                       "e1:2379,e2", "--rdzv-conf", "lease_ttl=2", "train.py"});
  fanout::FanoutSite etcd_site = site();
  etcd_site.endpoint = inv.config.rdzv_endpoint;
  auto options = fanout::agent_options(inv, etcd_site, "h1", 0, true);
  CHECK(options[2] == "--rdzv-backend=etcd");
  CHECK(options[3] == "--rdzv-endpoint=e1:2379,e2");
  CHECK(options[5] == "--rdzv-conf=lease_ttl=2");  // no is_host: no daemon anywhere
}

TEST_CASE("ssh launches: one per host, quoted remote command, stdin kept", "[fanout]") {
  auto inv = parse_ok({"--hosts", "h1,h2:3", "--ssh-port", "2222", "--ssh-user", "bob",
                       "--forward-env", "NCCL_*", "train.py", "a b; rm -rf /"});
  auto launches = fanout::ssh_launches(inv, site());
  REQUIRE(launches);
  REQUIRE(launches->size() == 2);
  const auto& second = (*launches)[1];
  CHECK(second.label == "h2");
  CHECK(second.stdin_pipe);
  std::vector<std::string> head(second.argv.begin(), second.argv.end() - 1);
  CHECK(head == std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "-p", "2222", "-l", "bob",
                                         "--", "h2"});
  const std::string& remote = second.argv.back();
  CHECK_THAT(remote, Catch::StartsWith("cd '/work dir' && exec env 'NCCL_DEBUG=INFO' "
                                       "/opt/ddprun/bin/ddprun '--launcher=local'"));
  CHECK_THAT(remote, Catch::Contains("'--nproc-per-node=3' '--local-addr=h2' --exit-on-stdin-eof "
                                     "--secret-from-stdin"));
  CHECK_THAT(remote, Catch::EndsWith("train.py 'a b; rm -rf /'"));
}

TEST_CASE("the ssh probe: ConnectTimeout before the user's options, then `true`", "[fanout]") {
  auto inv = parse_ok({"--hosts", "h1,h2", "--ssh-command", "ssh -F /etc/c", "train.py"});
  auto probe = fanout::ssh_probe(inv, "h2", 10);
  REQUIRE(probe);
  CHECK(*probe == std::vector<std::string>{"ssh", "-F", "/etc/c", "-o", "ConnectTimeout=10", "-o",
                                           "BatchMode=yes", "--", "h2", "true"});
}

TEST_CASE("pbsdsh launches: -n per node on PBS Pro, one -u on Torque, via /bin/sh -c", "[fanout]") {
  std::map<std::string, std::string> env = {{"PBS_JOBID", "9.srv"}, {"PBS_NODEFILE", "/pbs/nodes"}};
  auto inv = parse_ok({"--launcher", "pbs", "train.py"}, env,
                      {{"/pbs/nodes", "n1\nn1\nn2\nn2\nn3\n"}}, "n1");
  CHECK(inv.config.run_id == "9.srv");
  auto pro = fanout::pbs_launches(inv, site(), cluster::PbsFlavor::kPbsPro, "pbsdsh");
  REQUIRE(pro);
  REQUIRE(pro->size() == 3);
  const auto& n2 = (*pro)[1];
  CHECK(n2.label == "n2");
  CHECK_FALSE(n2.stdin_pipe);
  REQUIRE(n2.argv.size() == 7);
  CHECK(std::vector<std::string>(n2.argv.begin(), n2.argv.begin() + 6) ==
        std::vector<std::string>{"pbsdsh", "-n", "2", "--", "/bin/sh", "-c"});
  CHECK_THAT(n2.argv[6], Catch::StartsWith("cd '/work dir' && exec env 'NCCL_DEBUG=INFO' "));
  CHECK_THAT(n2.argv[6], Catch::Contains("--nnodes=3:3"));
  CHECK_THAT(n2.argv[6], Catch::Contains("--local-addr=n2"));
  CHECK_THAT(n2.argv[6], Catch::Contains("--rdzv-id=9.srv"));
  CHECK_THAT(n2.argv[6], !Catch::Contains("exit-on-stdin-eof"));
  CHECK_THAT(n2.argv[6], !Catch::Contains("secret-from-stdin"));
  CHECK((*pro)[2].argv[2] == "4");

  auto torque = fanout::pbs_launches(inv, site(), cluster::PbsFlavor::kTorque, "pbsdsh");
  REQUIRE(torque);
  REQUIRE(torque->size() == 1);
  CHECK(std::vector<std::string>(torque->front().argv.begin(), torque->front().argv.begin() + 3) ==
        std::vector<std::string>{"pbsdsh", "-u", "--"});
  CHECK_THAT(torque->front().argv.back(), !Catch::Contains("--local-addr"));
}
