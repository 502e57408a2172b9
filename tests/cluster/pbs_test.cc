// PBS: node files, this node's rank, flavor detection and the pbsdsh command lines.
#include "launcher/cluster/pbs_launch.h"
#include "launcher/cluster/pbs_nodefile.h"
#include "tests/catch.h"

using namespace ddp::launcher::cluster;

namespace {

const char* kTwoNodes =
    "gpu-n01.cluster.example\ngpu-n01.cluster.example\ngpu-n01.cluster.example\n"
    "gpu-n01.cluster.example\ngpu-n02.cluster.example\ngpu-n02.cluster.example\n"
    "gpu-n02.cluster.example\ngpu-n02.cluster.example\n";

Environment pbs_env() {
  return {{"PBS_JOBID", "1234.pbs-server"}, {"PBS_NODEFILE", "/var/spool/pbs/aux/1234"}};
}

}  // namespace

TEST_CASE("node file: unique hosts in first-appearance order, with slots", "[cluster][pbs]") {
  auto nodes = parse_pbs_nodefile("b\n a \n\nb\nc\na\n", "/f");
  REQUIRE(nodes);
  REQUIRE(nodes->size() == 3);
  CHECK((*nodes)[0].host == "b");
  CHECK((*nodes)[0].slots == 2);
  CHECK((*nodes)[0].first_line == 0);
  CHECK((*nodes)[1].host == "a");
  CHECK((*nodes)[1].slots == 2);
  CHECK((*nodes)[1].first_line == 1);
  CHECK((*nodes)[2].host == "c");
  CHECK((*nodes)[2].first_line == 3);  // blank lines do not count

  auto bad = parse_pbs_nodefile("n1\nn2 extra\n", "/var/spool/pbs/aux/9");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.status().message(), Catch::Contains("/var/spool/pbs/aux/9:2: 'n2 extra'"));
  auto empty = parse_pbs_nodefile("\n\n", "/f");
  REQUIRE_FALSE(empty);
  CHECK_THAT(empty.status().message(), Catch::Contains("lists no hosts"));
}

TEST_CASE("this node's rank matches short names and FQDNs", "[cluster][pbs]") {
  CHECK(in_pbs_job(pbs_env()));
  CHECK_FALSE(in_pbs_job({}));
  for (const char* self : {"gpu-n02", "gpu-n02.cluster.example", "GPU-N02"}) {
    INFO(self);
    auto c = pbs_context(pbs_env(), kTwoNodes, self);
    REQUIRE(c);
    CHECK(c->scheduler == "pbs");
    CHECK(c->nnodes == 2);
    CHECK(c->node_rank == 1);
    CHECK(c->endpoint_host == "gpu-n01.cluster.example");
    CHECK(c->run_id == "1234.pbs-server");
    CHECK(c->hosts ==
          std::vector<std::string>{"gpu-n01.cluster.example", "gpu-n02.cluster.example"});
  }
  // A short name in the file matches this machine's FQDN too.
  auto c = pbs_context(pbs_env(), "n1\nn1\n", "n1.cluster.example");
  REQUIRE(c);
  CHECK(c->nnodes == 1);
  CHECK(c->node_rank == 0);

  auto stranger = pbs_context(pbs_env(), kTwoNodes, "login1");
  REQUIRE_FALSE(stranger);
  CHECK_THAT(stranger.status().message(), Catch::Contains("'login1' is not among"));
  CHECK_THAT(stranger.status().message(), Catch::Contains("/var/spool/pbs/aux/1234"));
  // Same short name, different domain: not this machine.
  CHECK_FALSE(pbs_context(pbs_env(), "n1.a.example\n", "n1.b.example"));
  // Two entries that both match this machine's short name: ambiguous, not a guess.
  auto twice = pbs_context(pbs_env(), "n1.a.example\nn1.b.example\n", "n1");
  REQUIRE_FALSE(twice);
  CHECK_THAT(twice.status().message(), Catch::Contains("matches several"));
}

TEST_CASE("PBS flavor from pbsdsh --version or the user's word", "[cluster][pbs]") {
  auto flavor = [](std::string output, Environment env = {}) {
    auto r = detect_pbs_flavor({std::move(output), std::move(env)});
    INFO(r.status().to_string());
    REQUIRE(r);
    return *r;
  };
  CHECK(flavor("pbs_version = 22.05.11\n") == PbsFlavor::kPbsPro);
  CHECK(flavor("Version: 6.1.3\nCommit: abc\n") == PbsFlavor::kTorque);
  CHECK(flavor("torque 2.4.16") == PbsFlavor::kTorque);
  CHECK(flavor("", {{"PBS_VERSION", "TORQUE-4.2.10"}}) == PbsFlavor::kTorque);
  CHECK(flavor("pbs_version = 19.1", {{"DDPRUN_PBS_FLAVOR", "torque"}}) == PbsFlavor::kTorque);
  CHECK(flavor("", {{"DDPRUN_PBS_FLAVOR", "OpenPBS"}}) == PbsFlavor::kPbsPro);
  auto unknown = detect_pbs_flavor({"pbsdsh: invalid option -- '-'", {}});
  REQUIRE_FALSE(unknown);
  CHECK_THAT(unknown.status().message(), Catch::Contains("DDPRUN_PBS_FLAVOR=torque"));
  auto bad = detect_pbs_flavor({"", {{"DDPRUN_PBS_FLAVOR", "lsf"}}});
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.status().message(), Catch::Contains("DDPRUN_PBS_FLAVOR=lsf"));
}

TEST_CASE("pbsdsh command lines per flavor", "[cluster][pbs]") {
  auto nodes = parse_pbs_nodefile(kTwoNodes, "/f");
  REQUIRE(nodes);
  std::vector<std::string> agent{
      "/opt/ddprun/bin/ddprun", "--nproc-per-node", "4", "train.py", "-u", "--lr", "0.1"};
  using Argv = std::vector<std::string>;
  auto torque = pbsdsh_commands(PbsFlavor::kTorque, *nodes, "pbsdsh", agent);
  CHECK(torque == std::vector<Argv>{{"pbsdsh", "-u", "--", "/opt/ddprun/bin/ddprun",
                                     "--nproc-per-node", "4", "train.py", "-u", "--lr", "0.1"}});
  auto pro = pbsdsh_commands(PbsFlavor::kPbsPro, *nodes, "/opt/pbs/bin/pbsdsh", agent);
  REQUIRE(pro.size() == 2);
  CHECK(pro[0] == Argv{"/opt/pbs/bin/pbsdsh", "-n", "0", "--", "/opt/ddprun/bin/ddprun",
                       "--nproc-per-node", "4", "train.py", "-u", "--lr", "0.1"});
  CHECK(pro[1][2] == "4");  // the first line of the second host
  for (const auto& argv : pro) {
    // PBS Pro has no -u, and its -o would stop pbsdsh from waiting for the agents.
    CHECK(std::find(argv.begin(), argv.begin() + 4, "-u") == argv.begin() + 4);
    CHECK(std::find(argv.begin(), argv.begin() + 4, "-o") == argv.begin() + 4);
  }
}
