#include "launcher/gpu_selection.h"

#include <algorithm>

#include "common/text.h"
#include "launcher/option_values.h"

namespace ddp::launcher {
namespace {

bool is_uuid_token(std::string_view token) {
  return token.rfind("GPU-", 0) == 0 || token.rfind("MIG-", 0) == 0;
}

// "8 GPUs (source)" or "4 visible GPUs (CUDA_VISIBLE_DEVICES=4,5,6,7)" for messages.
std::string describe(std::size_t visible, const std::optional<std::string>& cvd,
                     const GpuInventory& inventory) {
  std::string what = std::to_string(visible) + (visible == 1 ? " GPU" : " GPUs");
  if (cvd) return what + " visible (CUDA_VISIBLE_DEVICES=" + *cvd + ")";
  return what + " found (" + inventory.source() + ")";
}

Result<std::vector<std::string>> visible(const GpuInventory& inventory,
                                         const std::optional<std::string>& cvd) {
  Result<int> physical = inventory.physical_count();
  if (!physical) return physical.status();
  return visible_gpus(*physical, cvd);
}

}  // namespace

std::vector<std::string> visible_gpus(int physical_count,
                                      const std::optional<std::string>& cuda_visible_devices) {
  std::vector<std::string> out;
  if (!cuda_visible_devices) {
    for (int i = 0; i < physical_count; ++i) out.push_back(std::to_string(i));
    return out;
  }
  for (std::string_view piece : split(*cuda_visible_devices, ',')) {
    const std::string_view token = trim(piece, " ");
    if (is_uuid_token(token)) {
      out.emplace_back(token);
      continue;
    }
    const auto index = parse_number<int>(token);
    bool valid = index && *index >= 0 && *index < physical_count &&
                 std::find(out.begin(), out.end(), std::to_string(*index)) == out.end();
    if (!valid) break;  // CUDA ignores this entry and everything after it
    out.push_back(std::to_string(*index));
  }
  return out;
}

Result<int> count_for_device_word(std::string_view word, const GpuInventory& inventory,
                                  const std::optional<std::string>& cuda_visible_devices,
                                  int cpu_count) {
  if (word == "cpu") return cpu_count;
  if (word != "gpu" && word != "auto") {
    return invalid_argument("--nproc-per-node: bad value '" + std::string(word) +
                            "'; expected a worker count >= 1, gpu, cpu or auto");
  }
  auto gpus = visible(inventory, cuda_visible_devices);
  if (!gpus) return gpus.status();
  if (!gpus->empty()) return static_cast<int>(gpus->size());
  if (word == "auto") return cpu_count;
  return invalid_argument("--nproc-per-node gpu: no GPU is " +
                          std::string(cuda_visible_devices ? "visible (CUDA_VISIBLE_DEVICES=" +
                                                                 *cuda_visible_devices + ")"
                                                           : "found (" + inventory.source() + ")") +
                          "; give a number of workers, or use cpu or auto");
}

Result<std::vector<int>> select_gpu_ids(std::string_view spec, const GpuInventory& inventory,
                                        const std::optional<std::string>& cuda_visible_devices) {
  auto ids = parse_id_list("--gpu-ids", spec, "GPU id");
  if (!ids) return ids.status();
  auto gpus = visible(inventory, cuda_visible_devices);
  if (!gpus) return gpus.status();
  if (gpus->empty()) {
    return invalid_argument("--gpu-ids " + std::string(spec) + ": this machine has no usable " +
                            "GPU (" + describe(0, cuda_visible_devices, inventory) +
                            "); drop --gpu-ids to run on CPUs");
  }
  std::vector<int> physical;
  for (int id : *ids) {
    if (static_cast<std::size_t>(id) >= gpus->size()) {
      return invalid_argument("--gpu-ids " + std::string(spec) + ": GPU " + std::to_string(id) +
                              " does not exist; " +
                              describe(gpus->size(), cuda_visible_devices, inventory) +
                              ", so ids go from 0 to " + std::to_string(gpus->size() - 1));
    }
    const std::string& token = (*gpus)[static_cast<std::size_t>(id)];
    if (is_uuid_token(token)) {
      return invalid_argument("--gpu-ids: the inherited CUDA_VISIBLE_DEVICES=" +
                              *cuda_visible_devices + " names GPUs by UUID, which --gpu-ids " +
                              "cannot map to numbers; unset CUDA_VISIBLE_DEVICES or use indices");
    }
    physical.push_back(std::stoi(token));
  }
  return physical;
}

}  // namespace ddp::launcher
