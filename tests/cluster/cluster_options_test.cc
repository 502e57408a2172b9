// The command line with cluster options and Slurm/PBS environments: which launch is planned,
// what the scheduler's environment changes (a multi-node allocation's topology), explicit flags
// winning, and the fan-out plans of multi-node launches from one process (ssh, --launcher pbs).
#include <algorithm>

#include "launcher/options.h"
#include "tests/catch.h"
#include "tests/launcher/fake_gpu_inventory.h"

using namespace ddp::launcher;
using Kind = LaunchPlan::Kind;

namespace {

struct Machine {
  int gpus = 0;
  std::map<std::string, std::string> env = {};
  std::map<std::string, std::string> files = {};  // what read_file finds
  std::string hostname = "node01";
};

ddp::Result<Invocation> parse(std::vector<std::string> args, const Machine& m) {
  FakeGpuInventory inventory(m.gpus);
  LaunchEnvironment environment{m.env, &inventory, 4, "run-1234"};
  environment.hostname = m.hostname;
  environment.cwd = "/work";
  environment.read_file = [files = m.files](const std::string& path) -> ddp::Result<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return ddp::io_error("cannot open " + path + ": No such file");
    return it->second;
  };
  args.push_back("train.py");
  return parse_command_line(args, environment);
}

Invocation ok(const std::vector<std::string>& args, const Machine& m = {}) {
  auto r = parse(args, m);
  INFO(r.status().to_string());
  REQUIRE(r);
  return std::move(r).value();
}

std::string error(const std::vector<std::string>& args, const Machine& m = {}) {
  auto r = parse(args, m);
  REQUIRE_FALSE(r);
  CHECK(r.status().code() == ddp::ErrorCode::kInvalidArgument);
  CHECK(r.status().message().find('\n') == std::string::npos);
  return r.status().message();
}

Machine slurm(const std::string& nodelist = "node01", std::map<std::string, std::string> extra = {},
              int gpus = 4) {
  Machine m;
  m.gpus = gpus;
  m.env = {{"SLURM_JOB_ID", "777"}, {"SLURM_JOB_NODELIST", nodelist}, {"SLURM_NODEID", "0"}};
  for (auto& [k, v] : extra) m.env[k] = v;
  return m;
}

Machine pbs(const std::string& nodefile, const std::string& hostname = "n1.cluster.example") {
  Machine m;
  m.env = {{"PBS_JOBID", "55.server"}, {"PBS_NODEFILE", "/var/spool/pbs/aux/55.server"}};
  m.files = {{"/var/spool/pbs/aux/55.server", nodefile}};
  m.hostname = hostname;
  return m;
}

}  // namespace

TEST_CASE("outside any cluster the launch is local and nothing changes", "[cluster][options]") {
  auto inv = ok({});
  CHECK(inv.launch.kind == Kind::kLocal);
  CHECK(inv.config.run_id == "none");
  CHECK(inv.config.nproc_per_node == 1);
  CHECK_FALSE(inv.launch.context);
  CHECK(ok({"--launcher", "local"}).launch.kind == Kind::kLocal);
  CHECK(ok({"--launcher=auto"}).launch.kind == Kind::kLocal);
}

TEST_CASE("a single-node Slurm job: run id and GPUs from the environment", "[cluster][options]") {
  auto inv = ok({}, slurm("node01", {{"SLURM_STEP_GPUS", "2,3"}, {"SLURM_JOB_GPUS", "0,1,2,3"}}));
  CHECK(inv.launch.kind == Kind::kSlurm);
  REQUIRE(inv.launch.context);
  CHECK(inv.launch.context->nnodes == 1);
  CHECK(inv.config.run_id == "777");
  CHECK(inv.config.gpu_ids == std::vector<int>{2, 3});
  CHECK(inv.config.nproc_per_node == 2);
  CHECK(inv.config.job.min_nodes == 1);
  CHECK(inv.config.job.max_nodes == 1);
  CHECK(inv.config.node_rank == 0);

  // Slurm exported the global ids: the same physical GPUs.
  inv = ok({}, slurm("node01", {{"SLURM_STEP_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "2,3"}}));
  CHECK(inv.config.gpu_ids == std::vector<int>{2, 3});
  // Device cgroups: the step sees its two GPUs as 0,1.
  inv = ok({}, slurm("node01", {{"SLURM_STEP_GPUS", "6,7"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}));
  CHECK(inv.config.gpu_ids == std::vector<int>{0, 1});
  // --launcher slurm says the same thing explicitly.
  CHECK(ok({"--launcher", "slurm"}, slurm()).launch.kind == Kind::kSlurm);
}

TEST_CASE("explicit flags win over the Slurm environment", "[cluster][options]") {
  Machine m = slurm("node01", {{"SLURM_STEP_GPUS", "2,3"}});
  auto inv = ok({"--nproc-per-node", "1"}, m);
  CHECK(inv.config.nproc_per_node == 1);
  CHECK(inv.config.gpu_ids.empty());
  inv = ok({"--gpu-ids", "0"}, m);
  CHECK(inv.config.gpu_ids == std::vector<int>{0});
  CHECK(ok({"--rdzv-id", "mine"}, m).config.run_id == "mine");
  CHECK(ok({"--standalone"}, m).config.run_id == "run-1234");
  m.env.emplace("PET_NPROC_PER_NODE", "3");  // PET_* counts as given
  CHECK(ok({}, m).config.nproc_per_node == 3);
  // --launcher local ignores the allocation altogether.
  inv = ok({"--launcher", "local"}, slurm("node[01-08]", {{"SLURM_STEP_GPUS", "1"}}));
  CHECK(inv.launch.kind == Kind::kLocal);
  CHECK(inv.config.run_id == "none");
  CHECK(inv.config.gpu_ids.empty());
}

TEST_CASE("an etcd job in a Slurm allocation or fanned out keeps etcd", "[cluster][options]") {
  // Slurm: the allocation gives the node count and address; --rdzv-endpoint stays etcd's.
  auto inv = ok({"--rdzv-backend", "etcd", "--rdzv-endpoint", "e1:2379,e2"},
                slurm("node[01-03]", {{"SLURM_NODEID", "2"}}));
  CHECK(inv.config.rdzv_backend == "etcd");
  CHECK(inv.config.rdzv_endpoint == "e1:2379,e2");
  CHECK(inv.config.job.min_nodes == 3);
  CHECK(inv.config.job.max_nodes == 3);
  CHECK(inv.config.local_addr == "node03");
  CHECK(inv.config.rdzv_conf.count("is_host") == 0);
  CHECK(inv.notices.empty());
  // Fan-out over ssh: the agents get the backend and etcd's endpoints, nothing is hosted.
  inv = ok({"--hosts", "h1,h2", "--rdzv-backend", "etcd-v3", "--rdzv-endpoint", "e1"});
  CHECK(inv.launch.fan_out);
  CHECK(inv.config.rdzv_backend == "etcd-v3");
  CHECK(inv.config.rdzv_endpoint == "e1");
  CHECK(inv.config.job.max_nodes == 2);
}

TEST_CASE("a multi-node Slurm allocation feeds the c10d multi-node agent", "[cluster][options]") {
  // Node 1 of 2: joins the daemon that node01 (rank 0) hosts, advertises its own name.
  auto inv = ok({}, slurm("node[01-02]", {{"SLURM_NODEID", "1"}, {"SLURM_STEP_GPUS", "0,1"}}));
  CHECK(inv.launch.kind == Kind::kSlurm);
  CHECK(inv.config.rdzv_backend == "c10d");
  CHECK(inv.config.rdzv_endpoint == "node01:29400");
  CHECK(inv.config.job.min_nodes == 2);
  CHECK(inv.config.job.max_nodes == 2);
  CHECK(inv.config.node_rank == 1);
  CHECK(inv.config.run_id == "777");
  CHECK(inv.config.local_addr == "node02");
  CHECK(inv.config.rdzv_conf.at("is_host") == "0");
  CHECK(inv.config.gpu_ids == std::vector<int>{0, 1});
  CHECK(inv.notices.empty());
  // Node 0 hosts the daemon; DDPRUN_RDZV_PORT moves the port; IPv6 hosts get brackets.
  inv = ok({}, slurm("node[01-02]", {{"DDPRUN_RDZV_PORT", "31000"}}));
  CHECK(inv.config.rdzv_endpoint == "node01:31000");
  CHECK(inv.config.rdzv_conf.at("is_host") == "1");
  CHECK(inv.config.local_addr == "node01");
  CHECK(ok({}, slurm("fd00::1,fd00::2")).config.rdzv_endpoint == "[fd00::1]:29400");
  CHECK_THAT(error({}, slurm("node[01-02]", {{"DDPRUN_RDZV_PORT", "0"}})),
             Catch::Contains("DDPRUN_RDZV_PORT"));
  // What the user gives wins: --local-addr, --rdzv-conf is_host, --rdzv-id, --rdzv-backend.
  inv = ok({"--local-addr", "10.0.0.2", "--rdzv-conf", "is_host=true,join_timeout=60", "--rdzv-id",
            "mine"},
           slurm("node[01-02]", {{"SLURM_NODEID", "1"}}));
  CHECK(inv.config.local_addr == "10.0.0.2");
  CHECK(inv.config.rdzv_conf.at("is_host") == "true");
  CHECK(inv.config.rdzv_conf.at("join_timeout") == "60");
  CHECK(inv.config.run_id == "mine");
  CHECK(inv.config.rdzv_endpoint == "node01:29400");
  inv = ok({"--rdzv-backend", "static"}, slurm("node[01-02]", {{"SLURM_NODEID", "1"}}));
  CHECK(inv.config.rdzv_backend == "static");
  CHECK(inv.config.master_addr == "node01");
  CHECK(inv.config.node_rank == 1);
  CHECK(inv.config.job.max_nodes == 2);
  // Explicit topology flags are the user's: the allocation's node list is not applied.
  inv = ok({"--nnodes", "1"}, slurm("node[01-02]"));
  CHECK(inv.config.job.max_nodes == 1);
  CHECK(inv.config.rdzv_backend == "static");
  CHECK(inv.config.run_id == "777");
  CHECK(inv.notices.size() == 1);
}

TEST_CASE("bad Slurm environments and GPUs are clear errors", "[cluster][options]") {
  CHECK_THAT(error({}, slurm("node[01-")), Catch::Contains("never closed"));
  CHECK_THAT(error({}, slurm("node01", {{"SLURM_STEP_GPUS", "0,1"}}, 0)),
             Catch::Contains("SLURM_STEP_GPUS=0,1: "));
  CHECK_THAT(error({"--launcher", "slurm"}), Catch::Contains("not a Slurm job"));
}

TEST_CASE("PBS: one host runs here, several hosts run multi-node", "[cluster][options]") {
  auto inv = ok({}, pbs("n1.cluster.example\nn1.cluster.example\n"));
  CHECK(inv.launch.kind == Kind::kPbs);
  CHECK(inv.config.run_id == "55.server");
  REQUIRE(inv.launch.context);
  CHECK(inv.launch.context->hosts == std::vector<std::string>{"n1.cluster.example"});
  CHECK(ok({"--launcher", "pbs"}, pbs("n1\n", "n1")).launch.kind == Kind::kPbs);

  // Several hosts: this agent is node 1 of 2 (`pbsdsh -u ddprun ...`), c10d on n1.
  inv = ok({}, pbs("n1\nn1\nn2\nn2\n", "n2.cluster.example"));
  CHECK(inv.config.rdzv_backend == "c10d");
  CHECK(inv.config.rdzv_endpoint == "n1:29400");
  CHECK(inv.config.job.max_nodes == 2);
  CHECK(inv.config.node_rank == 1);
  CHECK(inv.config.local_addr == "n2");
  CHECK(inv.config.rdzv_conf.at("is_host") == "0");
  CHECK(inv.config.run_id == "55.server");
  // --launcher pbs: this one process starts every node's agent through pbsdsh.
  inv = ok({"--launcher", "pbs", "--nproc-per-node", "3"}, pbs("n1\nn1\nn2\nn2\n", "n1"));
  CHECK(inv.launch.kind == Kind::kPbs);
  CHECK(inv.launch.fan_out);
  REQUIRE(inv.launch.pbs_nodes.size() == 2);
  CHECK(inv.launch.pbs_nodes[1].host == "n2");
  CHECK(inv.launch.pbs_nodes[1].first_line == 2);
  CHECK(inv.config.job.max_nodes == 2);
  CHECK(inv.launch.nproc_per_node == "3");
  CHECK(inv.config.run_id == "55.server");
  CHECK(inv.launch.agent_args == std::vector<std::string>{"train.py"});
  CHECK_THAT(error({}, pbs("n1\n", "login")), Catch::Contains("'login' is not among"));
  Machine missing = pbs("n1\n");
  missing.files.clear();
  CHECK_THAT(error({}, missing), Catch::Contains("PBS_NODEFILE=/var/spool/pbs/aux/55.server: "));
  CHECK_THAT(error({"--launcher", "pbs"}), Catch::Contains("not a PBS job"));
}

TEST_CASE("ssh: one local host runs here with its slots", "[cluster][options]") {
  auto inv = ok({"--hosts", "localhost:3"});
  CHECK(inv.launch.kind == Kind::kSsh);
  CHECK(inv.config.nproc_per_node == 3);
  CHECK(ok({"--hosts", "node01.cluster.example:2"}).config.nproc_per_node == 2);
  CHECK(ok({"--hosts", "localhost:3", "--nproc-per-node", "1"}).config.nproc_per_node == 1);
  Machine m;
  m.files = {{"/etc/hosts.ddp", "# one node\nnode01 slots=2\n"}};
  CHECK(ok({"--hostfile", "/etc/hosts.ddp"}, m).config.nproc_per_node == 2);
  m.env = {{"PET_HOSTS", "127.0.0.1:4"}};
  CHECK(ok({}, m).config.nproc_per_node == 4);
}

TEST_CASE("ssh: each node's agent gets --event-log as given (its own file on its own machine)",
          "[cluster][options]") {
  auto inv = ok({"--hosts", "h1,h2", "--event_log", "logs/events.jsonl"});
  CHECK(inv.launch.fan_out);
  CHECK(inv.config.event_log == "logs/events.jsonl");
  CHECK(inv.launch.agent_args ==
        std::vector<std::string>{"--event-log=logs/events.jsonl", "train.py"});
}

TEST_CASE("ssh: several or remote hosts are a fan-out, bad host input is an error",
          "[cluster][options]") {
  auto inv = ok({"--hosts", "h1,h2:4", "--max-restarts", "1", "--nproc-per-node", "2",
                 "--rdzv-conf", "join_timeout=60", "--local-addr", "10.0.0.1"});
  CHECK(inv.launch.kind == Kind::kSsh);
  CHECK(inv.launch.fan_out);
  CHECK(inv.config.rdzv_backend == "c10d");
  CHECK(inv.config.job.min_nodes == 2);
  CHECK(inv.config.job.max_nodes == 2);
  CHECK(inv.config.run_id == "run-1234");  // random unless --rdzv-id
  CHECK(inv.launch.nproc_per_node == "2");
  // What the fan-out sets per node is not in agent_args; the rest is.
  CHECK(inv.launch.agent_args == std::vector<std::string>{"--max-restarts=1", "train.py"});
  inv = ok({"--hosts", "gpu7", "--rdzv-id", "mine", "--nnodes", "1:1"});
  CHECK(inv.launch.fan_out);
  CHECK(inv.config.run_id == "mine");
  CHECK_FALSE(ok({"--hosts", "localhost:2"}).launch.fan_out);
  CHECK_THAT(error({"--hosts", "localhost,h2"}), Catch::Contains("loopback name"));
  CHECK_THAT(error({"--hosts", "h1,h2", "--standalone"}), Catch::Contains("--standalone"));
  CHECK_THAT(error({"--hosts", "h1,h2", "--node-rank", "1", "--nnodes", "2"}),
             Catch::Contains("--node-rank"));
  CHECK_THAT(error({"--hosts", "h1,h2", "--rdzv-backend", "static"}),
             Catch::Contains("drop --rdzv-backend"));
  CHECK_THAT(error({"--hosts", "h1,h2", "--nnodes", "3"}), Catch::Contains("2 nodes"));
  Machine m;
  m.files = {{"hf", "a slots=2\nb slots=x\n"}, {"two", "a\nb slots=3\n"}};
  CHECK_THAT(error({"--hostfile", "hf"}, m), Catch::Contains("hf:2: 'slots=x'"));
  inv = ok({"--hostfile", "two"}, m);
  CHECK(inv.launch.fan_out);
  CHECK(inv.launch.hosts.size() == 2);
  CHECK(inv.launch.hosts[1].slots == 3);
  CHECK_THAT(error({"--hostfile", "nope"}, m), Catch::Contains("--hostfile nope: cannot open"));
  CHECK_THAT(error({"--hosts", "a", "--hostfile", "hf"}, m), Catch::Contains("give one of them"));
  CHECK_THAT(error({"--hosts", "a,a"}), Catch::Contains("listed twice"));
}

TEST_CASE("ssh options: stored when valid, rejected when wrong or pointless",
          "[cluster][options]") {
  auto inv = ok({"--hosts", "localhost", "--ssh-command", "/usr/bin/ssh -F /etc/cfg", "--ssh-port",
                 "2222", "--ssh-identity", "/k/id", "--ssh-user", "bob", "--forward-env", "A,B_*"});
  CHECK(inv.launch.ssh.command == std::vector<std::string>{"/usr/bin/ssh", "-F", "/etc/cfg"});
  CHECK(inv.launch.ssh.port == 2222);
  CHECK(inv.launch.ssh.identity == "/k/id");
  CHECK(inv.launch.ssh.user == "bob");
  CHECK(inv.launch.forward_env == std::vector<std::string>{"A", "B_*"});
  auto defaults = ok({"--hosts", "localhost"});
  auto expected =
      ddp::launcher::cluster::parse_forward_env(ddp::launcher::cluster::kDefaultForwardEnv);
  REQUIRE(expected);
  CHECK(defaults.launch.forward_env == *expected);
  CHECK(defaults.launch.ssh.command == std::vector<std::string>{"ssh"});
  CHECK(ok({"--hosts", "localhost", "--forward-env", ""}).launch.forward_env.empty());
  CHECK_FALSE(defaults.launch.ssh.port);

  CHECK_THAT(error({"--ssh-port", "22"}), Catch::Contains("only applies to ssh launches"));
  CHECK_THAT(error({"--forward-env", "A"}), Catch::Contains("only applies to ssh launches"));
  CHECK_THAT(error({"--hosts", "localhost", "--ssh-port", "0"}), Catch::Contains("--ssh-port"));
  CHECK_THAT(error({"--hosts", "localhost", "--ssh-port", "x"}), Catch::Contains("--ssh-port"));
  CHECK_THAT(error({"--hosts", "localhost", "--ssh-port", ""}), Catch::Contains("--ssh-port"));
  CHECK_THAT(error({"--hosts", "localhost", "--ssh-user", "a b"}), Catch::Contains("--ssh-user"));
  CHECK_THAT(error({"--hosts", "localhost", "--ssh-identity", ""}), Catch::Contains("is empty"));
  CHECK_THAT(error({"--hosts", "localhost", "--forward-env", "A-B"}),
             Catch::Contains("--forward-env"));
  CHECK_THAT(error({"--launcher", "ssh"}), Catch::Contains("--launcher ssh needs the hosts"));
  CHECK_THAT(error({"--launcher", "slurm", "--hosts", "a"}), Catch::Contains("drop --launcher"));
  CHECK_THAT(error({"--launcher", "lsf"}), Catch::Contains("unknown launcher 'lsf'"));
}

TEST_CASE("the new options are in --help in both spellings", "[cluster][options]") {
  auto help = ok({"--help"});
  for (const char* name :
       {"--launcher", "--hosts", "--hostfile", "--ssh-command", "--ssh_command", "--ssh-port",
        "--ssh-identity", "--ssh-user", "--forward-env", "--forward_env"}) {
    INFO(name);
    CHECK_THAT(help.text, Catch::Contains(name));
  }
  auto underscore = ok({"--hosts", "localhost", "--ssh_port", "2200"});
  CHECK(underscore.launch.ssh.port == 2200);
}

TEST_CASE("a fan-out from a machine without GPUs leaves GPU counting to the nodes",
          "[cluster][options]") {
  Machine login;  // no GPUs here
  auto inv = ok({"--hosts", "h1,h2", "--nproc-per-node", "gpu"}, login);
  CHECK(inv.launch.fan_out);
  CHECK(inv.launch.nproc_per_node == "gpu");
  inv = ok({"--hosts", "h1,h2", "--gpu-ids", "1,6"}, login);
  CHECK(inv.launch.fan_out);
  CHECK(std::find(inv.launch.agent_args.begin(), inv.launch.agent_args.end(), "--gpu-ids=1,6") !=
        inv.launch.agent_args.end());
  // Workers that run here still need this machine's GPUs.
  CHECK_THAT(error({"--hosts", "localhost:2", "--nproc-per-node", "gpu"}, login),
             Catch::Contains("gpu"));
  CHECK_THAT(error({"--nproc-per-node", "gpu"}, login), Catch::Contains("gpu"));
  CHECK_THAT(error({"--hosts", "h1,h2", "--nproc-per-node", "two"}, login), Catch::Contains("two"));
}
