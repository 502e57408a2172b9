#include "launcher/raw_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <memory>
#include <string_view>

namespace ddp::launcher {
namespace {

struct OptionSpec {
  const char* key;  // underscore spelling; PET_<KEY> is its environment variable
  const char* short_name;
  bool flag;
  const char* default_text;
  const char* help;
};

// torchrun's options (and ddprun's few additions), with torchrun's defaults.
constexpr std::array<OptionSpec, 60> kOptions{{
    {"nnodes", "", false, "1:1", "Number of nodes, N or MIN:MAX"},
    {"nproc_per_node", "", false, "1", "Workers on this node: a number, gpu, cpu or auto"},
    {"gpu_ids", "", false, "", "Run on these GPUs (e.g. 1,6,3); one worker per GPU"},
    {"rdzv_backend", "", false, "static",
     "Rendezvous backend: static, c10d or etcd (etcd's v3 API, etcd >= 3.4; etcd-v2/etcd-v3 are "
     "the same backend, and torchrun agents cannot join its jobs)"},
    {"rdzv_endpoint", "", false, "", "Rendezvous endpoint, host[:port]"},
    {"rdzv_id", "", false, "none", "Job id shared by every node"},
    {"rdzv_conf", "", false, "", "Rendezvous settings, key=value,key=value"},
    {"standalone", "", true, "0", "Single node: embedded rendezvous on a free port, random id"},
    {"max_restarts", "", false, "0",
     "Group restarts after worker failures before the job fails (nodes leaving an elastic job "
     "use none)"},
    {"max_no_progress_restarts", "", false, "0",
     "Stop the job after this many restarts in a row without a new step (workers' heartbeats, "
     "docs/progress.md); 0: off"},
    {"no_progress_exit_code", "", false, "93",
     "Exit code of a job stopped for lack of progress: tells the scheduler not to requeue"},
    {"straggler_factor", "", false, "2",
     "A rank whose step time exceeds this many times the job's median is slow "
     "(docs/stragglers.md); 0: no straggler detection"},
    {"straggler_reports", "", false, "5",
     "Progress reports in a row (each with a new step) a rank must be slow to be a straggler"},
    {"exclude_straggler", "", true, "0",
     "Remove a straggler's node from the job like a lost node (a spare takes its place)"},
    {"monitor_interval", "", false, "0.1", "Accepted for torchrun compatibility; exits are events"},
    {"start_method", "", false, "spawn", "Accepted: spawn, fork or forkserver"},
    {"role", "", false, "default", "Worker role name (ROLE_NAME, output prefix)"},
    {"module", "-m", true, "0", "Run PROGRAM as a Python module (python -m)"},
    {"no_python", "", true, "0", "Run PROGRAM as given, not under Python"},
    {"run_path", "", true, "0", "Run PROGRAM as a Python script even with --no-python"},
    {"local_rank_arg", "", false, "none",
     "torch.distributed.launch scripts: underscore appends --local_rank=<n> to each worker's "
     "arguments, dash --local-rank=<n>"},
    {"use_env", "", true, "0",
     "Accepted for torch.distributed.launch scripts (LOCAL_RANK is always set)"},
    {"python", "", false, "",
     "Python interpreter (default: $DDPRUN_PYTHON, $PYTHON_EXEC, python3)"},
    {"log_dir", "", false, "",
     "Directory for attempt_<n>/<local_rank>/ logs (default: a temp dir)"},
    {"redirects", "-r", false, "0", "Streams to log files: 0-3 or per rank 0:1,1:2"},
    {"tee", "-t", false, "0", "Streams to log files and console: 0-3 or per rank 0:1,1:2"},
    {"local_ranks_filter", "", false, "", "Local ranks whose output reaches the console (0,2)"},
    {"node_rank", "", false, "0", "This node's rank (static rendezvous)"},
    {"master_addr", "", false, "127.0.0.1", "Worker store address (static rendezvous)"},
    {"master_port", "", false, "29500", "Worker store port (default: a free port, held open)"},
    {"local_addr", "", false, "", "Address this node advertises (default: hostname)"},
    {"status_port", "", false, "",
     "Where this node hosts the rendezvous: serve its read-only HTTP status (/metrics, /api/jobs, "
     "a page) on PORT (0: a free one); see `ddprun status`"},
    {"max_connections", "", false, "0",
     "Most open connections to each server this node hosts (rendezvous, workers' store); 0: "
     "from the open-file limit (docs/security.md)"},
    {"max_connections_per_peer", "", false, "0",
     "Most open connections from one IP address to each server this node hosts; 0: derived"},
    {"first_request_timeout", "", false, "10",
     "Seconds a new connection to a server this node hosts has to send its first complete "
     "request (0: off)"},
    {"store_allow", "", false, "",
     "CIDR[,CIDR...] or loopback: only these peers may use TCPStore operations on the servers "
     "this node hosts (agents' rendezvous requests are allowed from anywhere)"},
    {"signals_to_handle", "", false, "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
     "Signals forwarded to workers"},
    {"shutdown_timeout", "", false, "30", "Seconds between SIGTERM and SIGKILL when stopping"},
    {"hang_timeout", "", false, "",
     "A worker silent this long after a heartbeat is hung: stacks, then a failure (e.g. 5m)"},
    {"hang_first_beat_timeout", "", false, "",
     "With --hang-timeout: a worker without any heartbeat this long after its start is hung"},
    {"virtual_local_rank", "", true, "0", "Each worker sees only its own GPU"},
    {"numa_binding", "", false, "",
     "Bind each worker to CPUs near its GPU (or its share of the NUMA nodes): node, socket, "
     "exclusive or core-complex (docs/launcher.md)"},
    {"logs_specs", "", false, "", "Accepted: default only (torchrun's DefaultLogsSpecs)"},
    {"log_line_prefix_template", "", false, "",
     "Prefix of each worker output line, with ${role_name} ${local_rank} ${rank} ${hostname} "
     "(default: $TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE, else [${role_name}${local_rank}]:)"},
    {"duplicate_stdout_filters", "", false, "",
     "Copy teed stdout lines containing any of these comma-separated strings to "
     "<attempt dir>/filtered_stdout.log"},
    {"duplicate_stderr_filters", "", false, "",
     "Copy teed stderr lines containing any of these comma-separated strings to "
     "<attempt dir>/filtered_stderr.log"},
    {"print_completion", "", false, "", "Print a completion script for bash, zsh or tcsh and exit"},
    {"event_log_handler", "", false, "null",
     "Accepted: null only (torchrun's event handler; see --event-log)"},
    {"event_log", "", false, "",
     "Append this node's events (rounds, workers started and exited, restarts, failure, end) "
     "to FILE as JSON lines; - for stderr; {host} in FILE becomes the hostname "
     "(docs/event_log.md)"},
    {"launcher", "", false, "auto", "How nodes are reached: auto, local, ssh, slurm or pbs"},
    {"hosts", "", false, "", "ssh launch on these hosts: h1,h2:4 (HOST[:SLOTS])"},
    {"hostfile", "", false, "", "ssh launch on the hosts of FILE (`HOST slots=N` lines)"},
    {"ssh_command", "", false, "ssh", "ssh program and leading arguments"},
    {"ssh_port", "", false, "", "ssh port on every host"},
    {"ssh_identity", "", false, "", "ssh identity (private key) file"},
    {"ssh_user", "", false, "", "User to log in as on every host"},
    {"forward_env", "", false,
     "NCCL_*,GLOO_*,TORCH_*,PYTHONPATH,OMP_NUM_THREADS,DDPRUN_PYTHON,"
     "DDPRUN_LOG_LEVEL",
     "Variables sent to remote agents: NAME or PREFIX*, comma-separated"},
    // Hidden: what the launching ddprun gives the agents it starts over ssh (launcher/fanout/).
    {"exit_on_stdin_eof", "", true, "0", "Internal: stdin closing stops this agent like SIGTERM"},
    {"secret_from_stdin", "", true, "0",
     "Internal: the job secret is the first line of stdin (ssh fan-out; never argv)"},
    {"job_report_by_launcher", "", true, "0",
     "Internal: the launching ddprun prints the job's root cause, not this agent"},
}};

std::string dashed(std::string text) {
  std::replace(text.begin(), text.end(), '_', '-');
  return text;
}

std::string env_name(const std::string& key) {
  std::string out = "PET_" + key;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The usage line CLI11 cannot know: the program and its arguments are not CLI11 positionals.
class Formatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: ddprun [OPTIONS] PROGRAM [ARGS...]\n"
           "       ddprun status HOST[:PORT] [RUN_ID] [--json]\n";
  }
};

bool is_hidden(const OptionSpec& spec) {
  std::string_view help = spec.help;
  return help.starts_with("Internal:");
}

// The closed sets of values, for completion (the parsers check them).
std::vector<std::string> choices_of(std::string_view key) {
  if (key == "rdzv_backend") return {"static", "c10d", "etcd", "etcd-v2", "etcd-v3"};
  if (key == "nproc_per_node") return {"gpu", "cpu", "auto", "xpu"};
  if (key == "start_method") return {"spawn", "fork", "forkserver"};
  if (key == "numa_binding") return {"node", "socket", "exclusive", "core-complex"};
  if (key == "print_completion") return {"bash", "zsh", "tcsh"};
  if (key == "local_rank_arg") return {"none", "underscore", "dash"};
  if (key == "launcher") return {"auto", "local", "ssh", "slurm", "pbs"};
  if (key == "redirects" || key == "tee") return {"0", "1", "2", "3"};
  return {};
}

}  // namespace

std::vector<OptionName> public_options() {
  std::vector<OptionName> out{{"--help", "--help", "-h", true, {}},
                              {"--version", "--version", "", true, {}}};
  for (const OptionSpec& spec : kOptions) {
    if (is_hidden(spec)) continue;
    std::string dash = "--" + dashed(spec.key);
    out.push_back(
        {dash, "--" + std::string(spec.key), spec.short_name, spec.flag, choices_of(spec.key)});
  }
  return out;
}

bool is_flag_option(const std::string& key) {
  for (const OptionSpec& spec : kOptions) {
    if (key == spec.key) return spec.flag;
  }
  return false;
}

Result<RawOptions> read_raw_options(const std::vector<std::string>& args,
                                    const std::map<std::string, std::string>& env) {
  CLI::App app("ddprun: launch a distributed PyTorch job (torchrun's command line)", "ddprun");
  app.formatter(std::make_shared<Formatter>());
  app.prefix_command();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.footer(
      "Everything from PROGRAM on is passed to the program. Options also read PET_<NAME>\n"
      "(e.g. PET_NPROC_PER_NODE=4). See the README for GPU selection and Python choice.\n"
      "`ddprun status HOST[:PORT] [RUN_ID] [--json]` prints the jobs of a rendezvous daemon\n"
      "started with --status-port PORT (default 29401); docs/status.md.");
  bool version = false;
  app.add_flag("--version", version, "Print ddprun's version and exit");

  // Storage CLI11 writes into; std::map keeps element addresses stable.
  std::map<std::string, std::string> texts;
  std::map<std::string, bool> flags;
  std::map<std::string, CLI::Option*> cli;
  for (const OptionSpec& spec : kOptions) {
    std::string key = spec.key;
    std::string names = "--" + dashed(key);
    if (key.find('_') != std::string::npos) names += ",--" + key;
    if (*spec.short_name != '\0') names = std::string(spec.short_name) + "," + names;
    std::string help = spec.help;
    bool shows_default =
        *spec.default_text != '\0' && !spec.flag && help.find("(default:") == std::string::npos;
    if (shows_default) help += " [" + std::string(spec.default_text) + "]";
    cli[key] = spec.flag ? app.add_flag(names, flags[key], help)
                         : app.add_option(names, texts[key], help)->type_name("VALUE");
    if (is_hidden(spec)) {
      // torchrun options ddprun only recognises to reject or ignore, and internal ones
      cli[key]->group("");
    }
  }

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    RawOptions raw;
    raw.help = true;
    raw.help_text = app.help();
    return raw;
  } catch (const CLI::ParseError& e) {
    return invalid_argument(std::string(e.what()) + "; see ddprun --help");
  }

  RawOptions raw;
  raw.version = version;
  if (version) return raw;
  if (cli["print_completion"]->count() > 0) {
    raw.completion_shell = texts["print_completion"];
    return raw;
  }
  raw.program = app.remaining();
  if (!raw.program.empty() && raw.program.front() == "--") raw.program.erase(raw.program.begin());
  if (raw.program.empty()) {
    return invalid_argument(
        "missing PROGRAM: name the program to run after the options, e.g. "
        "ddprun --nproc-per-node 2 train.py --lr 0.1");
  }
  const std::string& first = raw.program.front();
  if (first.size() > 1 && first.front() == '-' && first != "--") {
    return invalid_argument("unknown option " + first.substr(0, first.find('=')) +
                            "; see ddprun --help for the options (program options go after " +
                            "PROGRAM)");
  }

  for (const OptionSpec& spec : kOptions) {
    std::string key = spec.key;
    RawValue value{spec.default_text, "default", false};
    if (cli[key]->count() > 0) {
      value = {spec.flag ? "1" : texts[key], "--" + dashed(key), true};
    } else if (auto it = env.find(env_name(key)); it != env.end() && !it->second.empty()) {
      value = {it->second, env_name(key), true};
    }
    raw.values[key] = value;
  }
  return raw;
}

}  // namespace ddp::launcher
