// Module state_dicts in Python's naming and order (see ddp/state_dict.h).
#include "ddp/state_dict.h"

#include <ATen/ATen.h>
#include <c10/util/irange.h>

#include <sstream>

namespace ddp {
namespace {

constexpr std::string_view kDdpPrefix = "module.";

std::string shape_text(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << sizes;
  return out.str();
}

// Python's DDP saves "module.<name>": strip it when every key carries it.
StateDict without_ddp_prefix(const StateDict& state) {
  if (state.empty()) return state;
  for (const auto& entry : state) {
    if (entry.key().rfind(kDdpPrefix, 0) != 0) return state;
  }
  StateDict stripped;
  for (const auto& entry : state)
    stripped.insert(entry.key().substr(kDdpPrefix.size()), entry.value());
  return stripped;
}

}  // namespace

StateDict model_state_dict(const torch::nn::Module& module) {
  StateDict state;
  for (const auto& item : module.named_modules("", /*include_self=*/true)) {
    const std::string prefix = item.key().empty() ? "" : item.key() + ".";
    // Undefined slots (Linear without bias) are skipped, as Python skips None.
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
      if (p.value().defined()) state.insert(prefix + p.key(), p.value().detach());
    }
    for (const auto& b : item.value()->named_buffers(/*recurse=*/false)) {
      if (b.value().defined()) state.insert(prefix + b.key(), b.value().detach());
    }
  }
  return state;
}

Status load_model_state_dict(torch::nn::Module& module, const StateDict& saved) {
  const StateDict state = without_ddp_prefix(saved);
  const StateDict targets = model_state_dict(module);
  // Check everything first: a failed load changes nothing.
  for (const auto& target : targets) {
    auto found = state.find(target.key());
    if (found == state.end()) {
      return invalid_argument("missing key '" + target.key() + "' in the checkpoint (model shape " +
                              shape_text(target.value().sizes()) + ")");
    }
    if (found->value().sizes() != target.value().sizes()) {
      return invalid_argument("size mismatch for '" + target.key() + "': the checkpoint has " +
                              shape_text(found->value().sizes()) + ", the model " +
                              shape_text(target.value().sizes()));
    }
  }
  for (const auto& entry : state) {
    if (!targets.contains(entry.key())) {
      return invalid_argument("unexpected key '" + entry.key() +
                              "' in the checkpoint: not a parameter or buffer of the model");
    }
  }
  at::NoGradGuard no_grad;
  for (const auto& target : targets) {
    at::Tensor dst = target.value();  // shares storage with the module's tensor
    dst.copy_(state.at(target.key()));
  }
  return Status::ok();
}

Result<StateDict> as_state_dict(const c10::IValue& value, const std::string& what) {
  if (!value.isGenericDict()) {
    return invalid_argument(what + " is a " + value.tagKind() + ", not a dict of tensors");
  }
  StateDict state;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString()) {
      return invalid_argument(what + " has a " + entry.key().tagKind() + " key, not a name");
    }
    if (!entry.value().isTensor()) {
      return invalid_argument(what + "['" + entry.key().toStringRef() + "'] is a " +
                              entry.value().tagKind() + ", not a tensor");
    }
    state.insert(entry.key().toStringRef(), entry.value().toTensor());
  }
  return state;
}

Status load_state_dict_file(torch::nn::Module& module, const std::string& path) {
  auto value = load_python_file(path);
  if (!value) return value.status();
  auto state = as_state_dict(*value, path);
  if (!state) return state.status();
  Status loaded = load_model_state_dict(module, *state);
  if (!loaded) return invalid_argument(path + ": " + loaded.message());
  return Status::ok();
}

}  // namespace ddp
