// The command line: spellings, defaults, PET_* fallbacks, program arguments, worker command.
#include <csignal>

#include "launcher/raw_options.h"
#include "tests/catch.h"
#include "tests/launcher/options_test_util.h"

using namespace ddp::launcher;
using namespace ddp::launcher::testing;

namespace {

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

struct Spelled {
  std::string dashed;              // --nproc-per-node (or -r)
  std::string underscore;          // --nproc_per_node (or --redirects)
  std::vector<std::string> value;  // empty for flags
};

// Every option with a value that changes the result, in both spellings.
const std::vector<Spelled> kOptions = {
    {"--nnodes", "--nnodes", {"2"}},
    {"--nproc-per-node", "--nproc_per_node", {"3"}},
    {"--gpu-ids", "--gpu_ids", {"1,3"}},
    {"--rdzv-backend", "--rdzv_backend", {"c10d"}},
    {"--rdzv-endpoint", "--rdzv_endpoint", {"node1:29400"}},
    {"--rdzv-id", "--rdzv_id", {"job7"}},
    {"--rdzv-conf", "--rdzv_conf", {"join_timeout=900"}},
    {"--standalone", "--standalone", {}},
    {"--max-restarts", "--max_restarts", {"3"}},
    {"--max-no-progress-restarts", "--max_no_progress_restarts", {"2"}},
    {"--no-progress-exit-code", "--no_progress_exit_code", {"42"}},
    {"--straggler-factor", "--straggler_factor", {"1.5"}},
    {"--straggler-reports", "--straggler_reports", {"7"}},
    {"--exclude-straggler", "--exclude_straggler", {}},
    {"--monitor-interval", "--monitor_interval", {"5"}},
    {"--role", "--role", {"trainer"}},
    {"-m", "--module", {}},
    {"--no-python", "--no_python", {}},
    {"--python", "--python", {"/opt/py/bin/python3"}},
    {"--log-dir", "--log_dir", {"/tmp/logs"}},
    {"-r", "--redirects", {"3"}},
    {"-t", "--tee", {"0:1,1:2"}},
    {"--local-ranks-filter", "--local_ranks_filter", {"0"}},
    {"--master-addr", "--master_addr", {"10.1.1.1"}},
    {"--master-port", "--master_port", {"1234"}},
    {"--local-addr", "--local_addr", {"node7"}},
    {"--signals-to-handle", "--signals_to_handle", {"SIGUSR1"}},
    {"--shutdown-timeout", "--shutdown_timeout", {"2.5"}},
    {"--virtual-local-rank", "--virtual_local_rank", {}},
    {"--log-line-prefix-template", "--log_line_prefix_template", {"[${rank}]:"}},
    {"--duplicate-stdout-filters", "--duplicate_stdout_filters", {"loss,acc"}},
    {"--duplicate-stderr-filters", "--duplicate_stderr_filters", {"Warning"}},
    {"--numa-binding", "--numa_binding", {"socket"}},
    {"--local-rank-arg", "--local_rank_arg", {"underscore"}},
    {"--event-log", "--event_log", {"events.jsonl"}},
    {"--max-connections", "--max_connections", {"500"}},
    {"--max-connections-per-peer", "--max_connections_per_peer", {"50"}},
    {"--first-request-timeout", "--first_request_timeout", {"2.5"}},
    {"--store-allow", "--store_allow", {"10.0.0.0/8"}},
};

std::vector<std::string> with(const std::string& name, const std::vector<std::string>& value,
                              std::vector<std::string> tail = {"train.py"}) {
  std::vector<std::string> args{name};
  args.insert(args.end(), value.begin(), value.end());
  args.insert(args.end(), tail.begin(), tail.end());
  return args;
}

}  // namespace

TEST_CASE("every option works in both spellings and changes the result", "[launcher]") {
  Machine m{.gpus = 4};
  std::string defaults = describe(ok({"train.py"}, m));
  for (const auto& o : kOptions) {
    INFO(o.dashed << " / " << o.underscore);
    std::string a = describe(ok(with(o.dashed, o.value), m));
    std::string b = describe(ok(with(o.underscore, o.value), m));
    CHECK(a == b);
    CHECK(a != defaults);
    if (!o.value.empty()) {  // --name=value works too
      CHECK(describe(ok({o.underscore + "=" + o.value[0], "train.py"}, m)) == a);
    }
  }
  // --node-rank needs more than one node to have a value other than 0.
  CHECK(ok({"--nnodes", "2", "--node-rank", "1", "x.py"}, m).config.node_rank == 1);
  CHECK(ok({"--nnodes", "2", "--node_rank", "1", "x.py"}, m).config.node_rank == 1);
  // --start-method and --run-path are checked in both spellings.
  for (const char* name : {"--start-method", "--start_method"}) {
    CHECK(ok({name, "fork", "x.py"}).config.worker_argv.size() == 3);
    CHECK_THAT(error({name, "thread", "x.py"}), Catch::Contains("spawn, fork or forkserver"));
  }
  for (const char* name : {"--run-path", "--run_path"}) {
    CHECK(ok({"--no-python", name, "x.py"}).config.worker_argv[1] == "-u");
  }
}

TEST_CASE("defaults equal torchrun's", "[launcher]") {
  auto inv = ok({"train.py"});
  const auto& c = inv.config;
  CHECK(c.worker_argv == std::vector<std::string>{"python3", "-u", "train.py"});
  CHECK(c.nproc_per_node == 1);
  CHECK(c.gpu_ids.empty());
  CHECK_FALSE(c.virtual_local_rank);
  CHECK(c.job.min_nodes == 1);
  CHECK(c.job.max_nodes == 1);
  CHECK(c.rdzv_backend == "static");
  CHECK(c.rdzv_endpoint.empty());
  CHECK(c.run_id == "none");
  CHECK(c.rdzv_conf.empty());
  CHECK_FALSE(c.standalone);
  CHECK(c.job.max_restarts == 0);
  CHECK(c.job.max_no_progress_restarts == 0);  // docs/progress.md: off
  CHECK(c.job.no_progress_exit_code == 93);
  CHECK(c.job.straggler_factor_milli == 2000);  // docs/stragglers.md
  CHECK(c.job.straggler_reports == 5);
  CHECK_FALSE(c.job.exclude_straggler);
  CHECK(c.role == "default");
  CHECK_FALSE(c.log_dir);
  CHECK(c.redirects.all == ddp::agent::Streams::kNone);
  CHECK(c.tee.all == ddp::agent::Streams::kNone);
  CHECK_FALSE(c.local_ranks_filter);
  CHECK(c.node_rank == 0);
  CHECK(c.master_addr == "127.0.0.1");
  CHECK(c.master_port == 29500);
  CHECK_FALSE(c.master_port_given);
  CHECK(c.local_addr.empty());
  CHECK(c.signals_to_handle == std::vector<int>{SIGTERM, SIGINT, SIGHUP, SIGQUIT});
  CHECK(c.shutdown_timeout == std::chrono::seconds(30));
  // The connection limits of ddp-rendezvous's defaults (caps from the open-file limit).
  CHECK(c.connection_limits.max_connections == 0);
  CHECK(c.connection_limits.max_per_peer == 0);
  CHECK(c.connection_limits.first_request_timeout == std::chrono::seconds(10));
  CHECK(c.connection_limits.store_allow.empty());
  CHECK(inv.notices.empty());
  CHECK(inv.script == "train.py");
  CHECK(inv.python == "python3");
}

TEST_CASE("PET_* variables fill options the command line leaves out", "[launcher]") {
  Machine m{.gpus = 4,
            .env = {{"PET_NPROC_PER_NODE", "3"},
                    {"PET_NNODES", "1:2"},
                    {"PET_RDZV_BACKEND", "c10d"},
                    {"PET_RDZV_ENDPOINT", "host:1"},
                    {"PET_RDZV_ID", "j"},
                    {"PET_MAX_RESTARTS", "2"},
                    {"PET_ROLE", "r"},
                    {"PET_TEE", "3"},
                    {"PET_MASTER_PORT", "4000"},
                    {"PET_SHUTDOWN_TIMEOUT", "1"},
                    {"PET_SIGNALS_TO_HANDLE", "TERM"},
                    {"PET_LOG_DIR", "/tmp/l"},
                    {"PET_EVENT_LOG", "-"},
                    {"PET_MAX_CONNECTIONS_PER_PEER", "7"},
                    {"PET_FIRST_REQUEST_TIMEOUT", "0"},
                    {"PET_STORE_ALLOW", "loopback"}}};
  auto c = ok({"x.py"}, m).config;
  CHECK(c.nproc_per_node == 3);
  CHECK(c.job.min_nodes == 1);
  CHECK(c.job.max_nodes == 2);
  CHECK(c.rdzv_backend == "c10d");
  CHECK(c.rdzv_endpoint == "host:1");
  CHECK(c.run_id == "j");
  CHECK(c.job.max_restarts == 2);
  CHECK(c.role == "r");
  CHECK(c.tee.all == ddp::agent::Streams::kBoth);
  CHECK(c.master_port == 4000);
  CHECK(c.master_port_given);
  CHECK(c.shutdown_timeout == std::chrono::seconds(1));
  CHECK(c.signals_to_handle == std::vector<int>{SIGTERM});
  CHECK(c.log_dir == std::filesystem::path("/tmp/l"));
  CHECK(c.event_log == "-");
  CHECK(c.connection_limits.max_per_peer == 7);
  CHECK(c.connection_limits.first_request_timeout.count() == 0);
  CHECK(c.connection_limits.store_allow.to_string() == "127.0.0.0/8,::1/128");

  SECTION("explicit flags win") {
    auto c2 = ok({"--nproc-per-node", "2", "--max_restarts", "0", "--role", "x", "x.py"}, m).config;
    CHECK(c2.nproc_per_node == 2);
    CHECK(c2.job.max_restarts == 0);
    CHECK(c2.role == "x");
  }
  SECTION("flags read PET_<NAME> as 0 or 1") {
    CHECK(ok({"x"}, {.env = {{"PET_NO_PYTHON", "1"}}}).config.worker_argv ==
          std::vector<std::string>{"x"});
    CHECK(ok({"x"}, {.env = {{"PET_NO_PYTHON", "0"}}}).config.worker_argv.size() == 3);
    CHECK(ok({"x"}, {.env = {{"PET_STANDALONE", "1"}}}).config.standalone);
    CHECK(ok({"m"}, {.env = {{"PET_MODULE", "1"}}}).config.worker_argv[2] == "-m");
    CHECK_THAT(error({"x"}, {.env = {{"PET_STANDALONE", "yes"}}}),
               Catch::Contains("PET_STANDALONE=yes") && Catch::Contains("0 (off) or 1"));
  }
  SECTION("a bad PET_* value names the variable") {
    CHECK_THAT(error({"x.py"}, {.env = {{"PET_NNODES", "3:2"}}}),
               Catch::StartsWith("PET_NNODES=3:2: ") && Catch::Contains("MIN (3)"));
    CHECK_THAT(error({"x.py"}, {.env = {{"PET_NPROC_PER_NODE", "many"}}}),
               Catch::StartsWith("PET_NPROC_PER_NODE=many"));
  }
  SECTION("an empty PET_* variable counts as unset") {
    CHECK(ok({"x.py"}, {.env = {{"PET_NPROC_PER_NODE", ""}}}).config.nproc_per_node == 1);
  }
}

TEST_CASE("everything from PROGRAM on belongs to the program", "[launcher]") {
  auto c = ok({"--nproc-per-node", "2", "train.py", "--lr", "3", "--nproc-per-node", "9"}).config;
  CHECK(c.nproc_per_node == 2);
  CHECK(c.worker_argv == std::vector<std::string>{"python3", "-u", "train.py", "--lr", "3",
                                                  "--nproc-per-node", "9"});
  auto h = ok({"train.py", "--help", "-m", "--version"}).config;
  CHECK(h.worker_argv ==
        std::vector<std::string>{"python3", "-u", "train.py", "--help", "-m", "--version"});
  CHECK(ok({"--", "train.py", "--x"}).config.worker_argv.back() == "--x");
}

TEST_CASE("worker command for .py and -m and --no-python and the Python choice", "[launcher]") {
  using V = std::vector<std::string>;
  CHECK(ok({"a.py", "1"}).config.worker_argv == V{"python3", "-u", "a.py", "1"});
  auto module = ok({"-m", "pkg.main", "--x"});
  CHECK(module.config.worker_argv == V{"python3", "-u", "-m", "pkg.main", "--x"});
  CHECK_FALSE(module.script);
  auto native = ok({"--no-python", "./a.out", "-v"});
  CHECK(native.config.worker_argv == V{"./a.out", "-v"});
  CHECK_FALSE(native.python);
  CHECK_FALSE(native.script);
  CHECK(ok({"--no-python", "--run-path", "a.py"}).config.worker_argv == V{"python3", "-u", "a.py"});
  CHECK_THAT(error({"--no-python", "-m", "pkg"}), Catch::Contains("cannot be used together"));
  CHECK_THAT(error({"--run-path", "-m", "pkg"}), Catch::Contains("cannot be used together"));
  CHECK_THAT(error({"--no-python", "--python", "/p", "x"}), Catch::Contains("--python"));

  // --python > DDPRUN_PYTHON > PYTHON_EXEC > python3
  Machine both{.env = {{"DDPRUN_PYTHON", "/a/python"}, {"PYTHON_EXEC", "/b/python"}}};
  CHECK(ok({"x.py"}, both).config.worker_argv[0] == "/a/python");
  CHECK(ok({"--python", "/c/python", "x.py"}, both).config.worker_argv[0] == "/c/python");
  CHECK(ok({"x.py"}, {.env = {{"PYTHON_EXEC", "/b/python"}}}).config.worker_argv[0] == "/b/python");

  // The interpreter is Python whatever its file is called; --no-python only by argv[0]'s name.
  CHECK(ok({"--python", "/opt/envs/py", "x.py"}).config.python_workers);
  CHECK(ok({"-m", "pkg"}).config.python_workers);
  CHECK_FALSE(native.config.python_workers);
  CHECK(ok({"--no-python", "/usr/bin/python3", "x.py"}).config.python_workers);
}

TEST_CASE("torch.distributed.launch scripts: --local-rank-arg and --use-env", "[launcher]") {
  using V = std::vector<std::string>;
  // As torch.distributed.launch: after the script (or module), before the script's arguments.
  CHECK(
      ok({"--local-rank-arg", "underscore", "main.py", "--gpu-ids", "1,6,3"}).config.worker_argv ==
      V{"python3", "-u", "main.py", "--local_rank=${local_rank}", "--gpu-ids", "1,6,3"});
  CHECK(ok({"--local_rank_arg=dash", "-m", "pkg.main", "--x"}).config.worker_argv ==
        V{"python3", "-u", "-m", "pkg.main", "--local-rank=${local_rank}", "--x"});
  CHECK(ok({"--local-rank-arg", "dash", "--no-python", "./a.out"}).config.worker_argv ==
        V{"./a.out", "--local-rank=${local_rank}"});
  CHECK(ok({"--local-rank-arg", "none", "a.py"}).config.worker_argv == V{"python3", "-u", "a.py"});
  CHECK(ok({"a.py"}, {.env = {{"PET_LOCAL_RANK_ARG", "underscore"}}}).config.worker_argv.back() ==
        "--local_rank=${local_rank}");
  // --use-env (torch.distributed.launch's, both spellings) is accepted and changes nothing.
  std::string plain = describe(ok({"--nproc_per_node=3", "main.py"}));
  CHECK(describe(ok({"--use-env", "--nproc_per_node=3", "main.py"})) == plain);
  CHECK(describe(ok({"--use_env", "--nproc_per_node=3", "main.py"})) == plain);
  CHECK_THAT(error({"--use-env", "--local-rank-arg", "dash", "x.py"}), Catch::Contains("drop one"));
  CHECK_THAT(error({"--local-rank-arg", "yes", "x.py"}), Catch::Contains("underscore"));
}

TEST_CASE("several nodes with a loopback address get a notice", "[launcher]") {
  auto notices = [](const std::vector<std::string>& args) { return ok(args).notices; };
  auto defaults = notices({"--nnodes", "2", "x.py"});
  REQUIRE(defaults.size() == 1);
  CHECK_THAT(defaults[0], Catch::StartsWith("--nnodes 2 with --master-addr 127.0.0.1 (the "
                                            "default): a loopback address"));
  CHECK_THAT(defaults[0], Catch::Contains("node rank 0"));
  auto c10d = notices(
      {"--nnodes", "1:2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:29400", "x.py"});
  REQUIRE(c10d.size() == 1);
  CHECK_THAT(c10d[0], Catch::Contains("--rdzv-endpoint localhost: a loopback address"));
  CHECK(
      notices({"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "[::1]:29400", "x.py"})
          .size() == 1);
  CHECK(notices({"--nnodes", "2", "--rdzv-endpoint", "127.0.1.1:4000", "x.py"}).size() == 1);
  CHECK(notices({"--nnodes", "2", "--master-addr", "10.0.0.1", "x.py"}).empty());
  CHECK(
      notices({"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "node0:29400", "x.py"})
          .empty());
  CHECK(notices({"x.py"}).empty());
}

TEST_CASE("node rank 0 of a static job says the other nodes' command", "[launcher]") {
  auto info = ok({"--nnodes", "3", "--nproc-per-node", "2", "--local-addr", "n0", "--log-dir",
                  "/tmp/my logs", "train.py", "--lr", "0.1"})
                  .info;
  REQUIRE(info.size() == 1);
  CHECK(info[0] ==
        "the other nodes join with: ddprun --master-addr=127.0.0.1 --master-port=29500 "
        "--node-rank=RANK --log-dir='/tmp/my logs' --nnodes=3 --nproc-per-node=2 train.py "
        "--lr 0.1   (RANK = 1 to 2, once each)");
  auto explicit_master = ok({"--nnodes", "2", "--node-rank", "0", "--master-addr", "10.0.0.1",
                             "--master-port", "4000", "-m", "pkg"})
                             .info;
  REQUIRE(explicit_master.size() == 1);
  CHECK_THAT(explicit_master[0],
             Catch::Contains("ddprun --node-rank=RANK --master-addr=10.0.0.1 --master-port=4000 "
                             "--module --nnodes=2 pkg   (RANK = 1 to 1"));
  CHECK(ok({"--nnodes", "2", "--node-rank", "1", "x.py"}).info.empty());
  CHECK(ok({"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "x.py"})
            .info.empty());
  CHECK(ok({"x.py"}).info.empty());
}

TEST_CASE("bad command lines are one-line errors naming the fix", "[launcher]") {
  CHECK_THAT(error({}), Catch::Contains("missing PROGRAM"));
  CHECK_THAT(error({"--nproc-per-node", "2"}), Catch::Contains("missing PROGRAM"));
  CHECK_THAT(error({"--bogus", "x.py"}), Catch::StartsWith("unknown option --bogus"));
  CHECK_THAT(error({"--bogus=3", "x.py"}), Catch::StartsWith("unknown option --bogus;"));
  CHECK_THAT(error({"--nnodes", "3:2", "x.py"}), Catch::Contains("write it as 2:3"));
  CHECK_THAT(error({"--nproc-per-node"}), Catch::Contains("--nproc-per-node"));
  CHECK_THAT(error({"--nproc-per-node", "0", "x.py"}), Catch::Contains("gpu, cpu or auto"));
  CHECK_THAT(error({"--nproc-per-node", "2.5", "x.py"}), Catch::Contains("'2.5'"));
  CHECK_THAT(error({"--max-restarts", "-1", "x.py"}), Catch::Contains("--max-restarts"));
  CHECK_THAT(error({"--master-port", "70000", "x.py"}), Catch::Contains("0 to 65535"));
  CHECK_THAT(error({"--signals-to-handle", "SIGKILL", "x.py"}), Catch::Contains("'SIGKILL'"));
  CHECK_THAT(error({"--shutdown-timeout", "soon", "x.py"}), Catch::Contains("seconds"));
  CHECK_THAT(error({"--monitor-interval", "-1", "x.py"}), Catch::Contains("--monitor-interval"));
  CHECK_THAT(error({"--rdzv-backend", "etcd", "x.py"}), Catch::Contains("needs --rdzv-endpoint"));
  CHECK_THAT(error({"--rdzv-backend", "etcd-v2", "x.py"}), Catch::Contains("default port 2379"));
  CHECK_THAT(error({"--rdzv-backend", "zk", "x.py"}), Catch::Contains("unknown backend"));
  CHECK_THAT(error({"--event-log", "", "x.py"}),
             Catch::Contains("--event-log is empty; give a file, or - for stderr"));
  CHECK_THAT(error({"--rdzv-endpoint", "h:x", "x.py"}), Catch::Contains("--rdzv-endpoint"));
  CHECK_THAT(error({"--max-connections", "5", "--max-connections-per-peer", "9", "x.py"}),
             Catch::Contains("exceeds --max-connections 5"));
  CHECK_THAT(error({"--max-connections", "-1", "x.py"}), Catch::Contains("--max-connections"));
  CHECK_THAT(error({"--first-request-timeout", "99999", "x.py"}), Catch::Contains("86400"));
  CHECK_THAT(error({"--store-allow", "", "x.py"}), Catch::Contains("--store-allow is empty"));
  CHECK_THAT(error({"--store-allow", "10.0.0.0/33", "x.py"}),
             Catch::Contains("'10.0.0.0/33' is not an IP address or network"));
  CHECK_THAT(error({"--rdzv-conf", "oops", "x.py"}), Catch::Contains("key=value"));
  CHECK_THAT(error({"--nnodes", "1:2", "x.py"}), Catch::Contains("--rdzv-backend c10d"));
  CHECK_THAT(error({"--nnodes", "2", "--node-rank", "2", "x.py"}), Catch::Contains("ranks 0 to 1"));
  CHECK_THAT(error({"--standalone", "--nnodes", "2", "x.py"}), Catch::Contains("single node"));
  CHECK_THAT(error({"--numa-binding", "nodes", "x.py"}),
             Catch::Contains("node, socket, exclusive or core-complex"));
  CHECK_THAT(error({"--logs-specs", "mine", "x.py"}),
             Catch::Contains("only torchrun's default logs spec") && !Catch::Contains("NUMA"));
  CHECK_THAT(error({"--nproc-per-node", "xpu", "x.py"}),
             Catch::Contains("cannot count Intel XPUs") && Catch::Contains("--nproc-per-node 4"));
  CHECK_THAT(error({"--print-completion", "fish"}), Catch::Contains("bash, zsh or tcsh"));
  CHECK_THAT(error({"--role", "", "x.py"}), Catch::Contains("--role"));
  CHECK_THAT(error({"--log-dir", "", "x.py"}), Catch::Contains("--log-dir"));
  CHECK_THAT(error({"--local-ranks-filter", "2", "--nproc-per-node", "2", "x.py"}),
             Catch::Contains("local rank 2 does not exist"));
  CHECK_THAT(error({"-r", "5", "x.py"}), Catch::Contains("0 (none)"));
}

TEST_CASE("standalone picks c10d with a free port and a random id", "[launcher]") {
  auto inv = ok({"--standalone", "--rdzv-id", "mine", "x.py"});
  CHECK(inv.config.standalone);
  CHECK(inv.config.rdzv_backend == "c10d");
  CHECK(inv.config.rdzv_endpoint.empty());
  CHECK(inv.config.run_id == "run-1234");
  REQUIRE(inv.notices.size() == 1);
  CHECK_THAT(inv.notices[0], Catch::Contains("ignores --rdzv-id=mine"));
}

TEST_CASE("static rendezvous takes the master from --rdzv-endpoint", "[launcher]") {
  auto c = ok({"--rdzv-endpoint", "node3:4567", "x.py"}).config;
  CHECK(c.master_addr == "node3");
  CHECK(c.master_port == 4567);
  CHECK(c.master_port_given);
  auto v6 = ok({"--rdzv-endpoint", "[::1]:99", "x.py"}).config;
  CHECK(v6.master_addr == "::1");
  CHECK(v6.master_port == 99);
  CHECK_FALSE(ok({"--master-port", "0", "x.py"}).config.master_port_given);
}

TEST_CASE("is_host is refused with the static backend, on one node too", "[launcher]") {
  for (const char* nnodes : {"1", "2"}) {
    CHECK_THAT(error({"--nnodes", nnodes, "--rdzv-backend", "static", "--rdzv-conf", "is_host=true",
                      "x.py"}),
               Catch::Contains("is_host does not apply to --rdzv-backend static") &&
                   Catch::Contains("drop is_host"));
  }
  CHECK(ok({"--rdzv-backend", "c10d", "--rdzv-conf", "is_host=true", "x.py"})
            .config.rdzv_conf.count("is_host"));
}

TEST_CASE("help and version need no program", "[launcher]") {
  auto help = ok({"--help"});
  CHECK(help.action == Invocation::Action::kHelp);
  CHECK_THAT(help.text, Catch::Contains("Usage: ddprun [OPTIONS] PROGRAM [ARGS...]") &&
                            Catch::Contains("--nproc_per_node") && Catch::Contains("--gpu-ids"));
  CHECK(ok({"-h"}).action == Invocation::Action::kHelp);
  CHECK(ok({"--version"}).action == Invocation::Action::kVersion);
}

TEST_CASE("TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT: seconds, off unless set", "[launcher]") {
  using namespace std::chrono_literals;
  CHECK(ok({"x.py"}).config.uninterruptible_state_timeout == 0ms);
  Machine env{.env = {{"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT", "1.5"}}};
  CHECK(ok({"x.py"}, env).config.uninterruptible_state_timeout == 1500ms);
  env.env["TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT"] = "";
  CHECK(ok({"x.py"}, env).config.uninterruptible_state_timeout == 0ms);
  env.env["TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT"] = "soon";
  CHECK_THAT(error({"x.py"}, env), Catch::Contains("TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT") &&
                                       Catch::Contains("soon"));
}

TEST_CASE("torchrun 2.9-2.15 options: values, env fallbacks, accepted defaults", "[launcher]") {
  // --log-line-prefix-template: the option, else PET_*, else TORCHELASTIC_*.
  CHECK(ok({"x.py"}).config.log_line_prefix_template.empty());
  Machine env{.env = {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "<${rank}>"}}};
  CHECK(ok({"x.py"}, env).config.log_line_prefix_template == "<${rank}>");
  env.env["PET_LOG_LINE_PREFIX_TEMPLATE"] = "{${local_rank}}";
  CHECK(ok({"x.py"}, env).config.log_line_prefix_template == "{${local_rank}}");
  CHECK(ok({"--log-line-prefix-template", "[$hostname]", "x.py"}, env)
            .config.log_line_prefix_template == "[$hostname]");
  // Filters: comma-separated, empty items dropped, PET_* too.
  auto filters = ok({"--duplicate-stdout-filters", "a,,b c,", "x.py"}).config;
  CHECK(filters.duplicate_stdout_filters == std::vector<std::string>{"a", "b c"});
  CHECK(filters.duplicate_stderr_filters.empty());
  Machine pet{.env = {{"PET_DUPLICATE_STDERR_FILTERS", "NaN"}}};
  CHECK(ok({"x.py"}, pet).config.duplicate_stderr_filters == std::vector<std::string>{"NaN"});
  // --numa-binding modes.
  using ddp::agent::NumaBinding;
  CHECK(ok({"x.py"}).config.numa_binding == NumaBinding::kNone);
  CHECK(ok({"--numa-binding", "node", "x.py"}).config.numa_binding == NumaBinding::kNode);
  CHECK(ok({"--numa-binding", "exclusive", "x.py"}).config.numa_binding == NumaBinding::kExclusive);
  CHECK(ok({"--numa_binding=core-complex", "x.py"}).config.numa_binding ==
        NumaBinding::kCoreComplex);
  Machine numa_env{.env = {{"PET_NUMA_BINDING", "socket"}}};
  CHECK(ok({"x.py"}, numa_env).config.numa_binding == NumaBinding::kSocket);
  // --logs-specs: torchrun's default entry point name is accepted, in both spellings.
  CHECK(ok({"--logs-specs", "default", "x.py"}).notices.empty());
  CHECK(ok({"--logs_specs=default", "x.py"}).notices.empty());
  Machine bad_specs{.env = {{"PET_LOGS_SPECS", "custom"}}};
  CHECK_THAT(error({"x.py"}, bad_specs), Catch::StartsWith("PET_LOGS_SPECS=custom: "));
  // --signals-to-handle, --shutdown-timeout, --virtual-local-rank from PET_*.
  Machine pets{.env = {{"PET_SIGNALS_TO_HANDLE", "SIGUSR2"},
                       {"PET_SHUTDOWN_TIMEOUT", "4"},
                       {"PET_VIRTUAL_LOCAL_RANK", "1"}}};
  auto c = ok({"x.py"}, pets).config;
  CHECK(c.signals_to_handle == std::vector<int>{SIGUSR2});
  CHECK(c.shutdown_timeout == std::chrono::seconds(4));
  CHECK(c.virtual_local_rank);
  // --master-port: torchrun >= 2.12 picks a free port when none is given; so does ddprun.
  CHECK_FALSE(ok({"x.py"}).config.master_port_given);
}

TEST_CASE("print-completion prints a script generated from the option table", "[launcher]") {
  for (const char* shell : {"bash", "zsh", "tcsh"}) {
    INFO(shell);
    auto inv = ok({"--print-completion", shell});
    CHECK(inv.action == Invocation::Action::kCompletion);
    // Every public option in every spelling, and the closed value sets.
    for (const auto& o : public_options()) {
      std::string name = std::string(shell) == "tcsh" && o.dashed.rfind("--", 0) == 0
                             ? o.dashed.substr(2)
                             : o.dashed;
      CHECK_THAT(inv.text, Catch::Contains(name));
    }
    CHECK_THAT(inv.text, Catch::Contains("core-complex") && Catch::Contains("etcd-v2") &&
                             Catch::Contains("--nproc_per_node"));
    CHECK_THAT(inv.text, !Catch::Contains("exit-on-stdin-eof"));  // internal options stay out
  }
  CHECK(ok({"--print_completion=bash"}).action == Invocation::Action::kCompletion);
}

TEST_CASE("help lists every torchrun 2.15 option", "[launcher]") {
  const std::string help = ok({"--help"}).text;
  for (const char* name : {"--nnodes",
                           "--nproc-per-node",
                           "--rdzv-backend",
                           "--rdzv-endpoint",
                           "--rdzv-id",
                           "--rdzv-conf",
                           "--standalone",
                           "--max-restarts",
                           "--monitor-interval",
                           "--start-method",
                           "--event-log-handler",
                           "--role",
                           "--module",
                           "--no-python",
                           "--run-path",
                           "--log-dir",
                           "--redirects",
                           "--tee",
                           "--local-ranks-filter",
                           "--node-rank",
                           "--master-addr",
                           "--master-port",
                           "--local-addr",
                           "--logs-specs",
                           "--numa-binding",
                           "--signals-to-handle",
                           "--duplicate-stdout-filters",
                           "--duplicate-stderr-filters",
                           "--virtual-local-rank",
                           "--shutdown-timeout",
                           "--log-line-prefix-template",
                           "--print-completion"}) {
    CHECK_THAT(help, Catch::Contains(name));
  }
}
