#include "launcher/options.h"

#include <limits>

#include "agent/workers/worker_args.h"
#include "launcher/completion.h"
#include "launcher/gpu_inventory.h"
#include "launcher/option_steps.h"
#include "launcher/option_values.h"
#include "launcher/raw_options.h"

namespace ddp::launcher {
namespace {

bool may_fan_out(const RawOptions& raw) {
  return raw.at("hosts").given || raw.at("hostfile").given || raw.at("launcher").text == "pbs";
}

// Stands in for the nodes' GPUs when a fan-out's agents will count their own: the worker
// options are then checked for what they say, not against this machine.
class NodesDecideInventory final : public GpuInventory {
 public:
  Result<int> physical_count() const override { return 1024; }
  std::string source() const override { return "the nodes"; }
};

// Checks the worker options of a possible fan-out without this machine's GPUs; the nodes'
// agents resolve them. Leaves placeholders in the config (the nodes get the options as written).
Status check_workers_for_nodes(const RawOptions& raw, const LaunchEnvironment& environment,
                               Invocation& out) {
  NodesDecideInventory nodes;
  LaunchEnvironment elsewhere = environment;
  elsewhere.gpus = &nodes;
  elsewhere.env.erase("CUDA_VISIBLE_DEVICES");
  if (Status s = steps::resolve_workers(raw, elsewhere, out); !s) return s;
  out.config.nproc_per_node = 1;
  out.config.gpu_ids.clear();
  return Status::ok();
}

// --local-rank-arg: the argument torch.distributed.launch adds after PROGRAM (before its own
// arguments), with torchrun's ${local_rank} macro the agent substitutes per worker; empty for
// none. --use-env says the script reads LOCAL_RANK, so the two together are a contradiction.
Result<std::string> local_rank_argument(const RawOptions& raw) {
  const RawValue& style = raw.at("local_rank_arg");
  auto use_env = steps::flag(raw, "use_env");
  if (!use_env) return use_env.status();
  std::string name;
  if (style.text == "underscore") {
    name = "--local_rank";
  } else if (style.text == "dash") {
    name = "--local-rank";
  } else if (style.text != "none") {
    return steps::from(style, invalid_argument("--local-rank-arg '" + style.text +
                                               "': use underscore (--local_rank=<n>, PyTorch "
                                               "1.x scripts), dash (--local-rank=<n>) or none"));
  }
  if (!name.empty() && *use_env) {
    return invalid_argument("--use-env means the script reads LOCAL_RANK, --local-rank-arg " +
                            style.text + " passes " + name + "=<n>; drop one of them");
  }
  return name.empty() ? name : name + "=" + agent::kLocalRankMacro;
}

}  // namespace

Result<Invocation> parse_command_line(const std::vector<std::string>& args,
                                      const LaunchEnvironment& environment) {
  auto raw = read_raw_options(args, environment.env);
  if (!raw) return raw.status();
  Invocation out;
  if (raw->help) {
    out.action = Invocation::Action::kHelp;
    out.text = raw->help_text;
    return out;
  }
  if (raw->version) {
    out.action = Invocation::Action::kVersion;
    return out;
  }
  if (raw->completion_shell) {
    auto script = completion_script(*raw->completion_shell, public_options());
    if (!script) return script.status();
    out.action = Invocation::Action::kCompletion;
    out.text = std::move(script).value();
    return out;
  }
  if (Status s = steps::resolve_program(*raw, environment, out); !s) return s;
  // A fan-out's agents count their own GPUs (--nproc-per-node gpu|auto and --gpu-ids reach
  // them as written), so a launching machine without those GPUs (a login node) is no error
  // then; when the workers run here, this machine's GPUs decide.
  Status workers = steps::resolve_workers(*raw, environment, out);
  if (!workers && !may_fan_out(*raw)) return workers;
  if (!workers) {
    if (Status s = check_workers_for_nodes(*raw, environment, out); !s) return s;
  }
  if (Status s = steps::resolve_rendezvous(*raw, environment, out); !s) return s;
  if (Status s = steps::resolve_cluster(*raw, environment, out); !s) return s;
  if (!workers && !out.launch.fan_out) return workers;
  if (Status s = steps::resolve_control(*raw, environment, out); !s) return s;
  if (Status s = steps::resolve_output(*raw, environment, out); !s) return s;
  if (Status s = steps::resolve_connections(*raw, out); !s) return s;
  steps::notice_loopback(*raw, out);
  steps::note_other_nodes_command(*raw, out);
  return out;
}

namespace steps {

Status from(const RawValue& value, Status status) {
  if (status.is_ok() || value.origin.rfind("--", 0) == 0) return status;
  return invalid_argument(value.origin + "=" + value.text + ": " + status.message());
}

Result<bool> flag(const RawOptions& raw, const std::string& key) {
  const RawValue& value = raw.at(key);
  auto parsed = parse_integer(value.origin, value.text, std::numeric_limits<long long>::min(),
                              std::numeric_limits<long long>::max());
  if (!parsed) {
    return invalid_argument(value.origin + "=" + value.text + ": expected 0 (off) or 1 (on)");
  }
  return *parsed != 0;
}

Status resolve_program(const RawOptions& raw, const LaunchEnvironment& environment,
                       Invocation& out) {
  auto module = flag(raw, "module");
  auto no_python = flag(raw, "no_python");
  auto run_path = flag(raw, "run_path");
  for (const auto* r : {&module, &no_python, &run_path}) {
    if (!*r) return r->status();
  }
  bool with_python = !*no_python || *run_path;  // torchrun: --run-path wins over --no-python
  if (*module && !with_python) {
    return invalid_argument("--no-python and -m/--module cannot be used together; drop one");
  }
  if (*module && *run_path) {
    return invalid_argument("--run-path and -m/--module cannot be used together; drop one");
  }
  auto env = [&](const char* name) {
    auto it = environment.env.find(name);
    return it == environment.env.end() ? std::string() : it->second;
  };
  auto& argv = out.config.worker_argv;
  if (with_python) {
    std::string python = raw.at("python").text;
    if (python.empty()) python = env("DDPRUN_PYTHON");
    if (python.empty()) python = env("PYTHON_EXEC");
    if (python.empty()) python = "python3";
    out.python = python;
    argv = {python, "-u"};
    if (*module) {
      argv.push_back("-m");
    } else {
      out.script = raw.program.front();
    }
  } else if (raw.at("python").given) {
    return invalid_argument("--python has no effect with --no-python; drop one of them");
  }
  argv.insert(argv.end(), raw.program.begin(), raw.program.end());
  out.config.python_workers = with_python || agent::runs_python(argv);
  auto local_rank = local_rank_argument(raw);
  if (!local_rank) return local_rank.status();
  if (!local_rank->empty()) {
    // After the script (or -m MODULE), before the script's own arguments, as
    // torch.distributed.launch places it.
    auto program_end = argv.end() - static_cast<std::ptrdiff_t>(raw.program.size()) + 1;
    argv.insert(program_end, *local_rank);
  }
  return Status::ok();
}

}  // namespace steps
}  // namespace ddp::launcher
