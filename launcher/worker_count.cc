// steps::resolve_workers: how many workers, on which GPUs (see launcher/gpu_selection.h).
#include <string>

#include "launcher/gpu_selection.h"
#include "launcher/option_steps.h"
#include "launcher/option_values.h"

namespace ddp::launcher::steps {
namespace {

constexpr long long kMaxWorkers = 65536;

std::optional<std::string> cuda_visible(const LaunchEnvironment& environment) {
  auto it = environment.env.find("CUDA_VISIBLE_DEVICES");
  if (it == environment.env.end()) return std::nullopt;
  return it->second;
}

Status gpu_ids_given(const RawValue& ids, const RawValue& nproc,
                     const LaunchEnvironment& environment, agent::AgentConfig& config) {
  if (Status s = take(ids, select_gpu_ids(ids.text, *environment.gpus, cuda_visible(environment)),
                      config.gpu_ids);
      !s) {
    return s;
  }
  std::string count = std::to_string(config.gpu_ids.size());
  config.nproc_per_node = static_cast<int>(config.gpu_ids.size());
  if (nproc.given && nproc.text != count) {
    return invalid_argument(nproc.origin + " " + nproc.text + " conflicts with --gpu-ids " +
                            ids.text + " (" + count + " GPUs, one worker each); drop " +
                            nproc.origin + " or make it " + count);
  }
  return Status::ok();
}

// --virtual-local-rank without --gpu-ids: worker i gets visible GPU i alone, when the
// machine has GPUs at all.
Status one_gpu_each(const LaunchEnvironment& environment, agent::AgentConfig& config) {
  auto physical = environment.gpus->physical_count();
  if (!physical) return physical.status();
  auto visible = visible_gpus(*physical, cuda_visible(environment));
  if (visible.empty()) return Status::ok();
  if (visible.size() < static_cast<std::size_t>(config.nproc_per_node)) {
    return invalid_argument("--virtual-local-rank: " + std::to_string(config.nproc_per_node) +
                            " workers but only " + std::to_string(visible.size()) +
                            " visible GPUs; lower --nproc-per-node or choose --gpu-ids");
  }
  std::string first_n;
  for (int i = 0; i < config.nproc_per_node; ++i) {
    if (i > 0) first_n.push_back(',');
    first_n.append(std::to_string(i));
  }
  auto selected = select_gpu_ids(first_n, *environment.gpus, cuda_visible(environment));
  if (!selected) return selected.status();
  config.gpu_ids = std::move(selected).value();
  return Status::ok();
}

}  // namespace

Status resolve_workers(const RawOptions& raw, const LaunchEnvironment& environment,
                       Invocation& out) {
  auto& config = out.config;
  const RawValue& nproc = raw.at("nproc_per_node");
  const RawValue& ids = raw.at("gpu_ids");
  if (environment.gpus == nullptr) {
    return internal_error("parse_command_line was given no GPU inventory");
  }
  if (Status s = take(raw.at("virtual_local_rank"), flag(raw, "virtual_local_rank"),
                      config.virtual_local_rank);
      !s) {
    return s;
  }
  if (ids.given) return gpu_ids_given(ids, nproc, environment, config);

  if (nproc.text == "xpu") {
    // torchrun asks torch.xpu.device_count() (Intel's Level Zero runtime); ddprun links no
    // torch and no Level Zero, and a render node in /sys/class/drm does not say whether the
    // runtime would count it (integrated GPUs, driver versions), so it does not guess.
    return from(
        nproc, invalid_argument(nproc.origin +
                                " xpu: ddprun cannot count Intel XPUs (that needs torch.xpu); give "
                                "the number of workers, e.g. --nproc-per-node 4"));
  }
  if (nproc.text == "gpu" || nproc.text == "cpu" || nproc.text == "auto") {
    if (Status s = take(nproc,
                        count_for_device_word(nproc.text, *environment.gpus,
                                              cuda_visible(environment), environment.cpu_count),
                        config.nproc_per_node);
        !s) {
      return s;
    }
  } else {
    auto count = parse_integer(nproc.origin, nproc.text, 1, kMaxWorkers);
    if (!count) {
      return from(nproc, invalid_argument(count.status().message() + ", or gpu, cpu or auto"));
    }
    config.nproc_per_node = static_cast<int>(*count);
  }
  if (config.virtual_local_rank) return one_gpu_each(environment, config);
  return Status::ok();
}

}  // namespace ddp::launcher::steps
