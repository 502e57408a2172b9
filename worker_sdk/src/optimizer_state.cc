// Optimizer state in Python's optimizer.state_dict() layout (see ddp/state_dict.h).
#include <ATen/ATen.h>
#include <c10/util/string_utils.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/version.h>

#include <initializer_list>
#include <tuple>
#include <vector>

#include "ddp/state_dict.h"

namespace ddp {
namespace {

using c10::IValue;
using GenericDict = c10::impl::GenericDict;

// LibTorch keys per-parameter state by the parameter's TensorImpl: its address as a string in
// 1.13, the pointer itself in 2.x (checked against 2.6).
#if TORCH_VERSION_MAJOR >= 2
using StateKey = void*;
StateKey state_key(const at::Tensor& param) { return param.unsafeGetTensorImpl(); }
#else
using StateKey = std::string;
StateKey state_key(const at::Tensor& param) {
  return c10::guts::to_string(param.unsafeGetTensorImpl());
}
#endif

GenericDict new_dict(const c10::TypePtr& key) { return GenericDict(key, c10::AnyType::get()); }

// What the two Adam variants share; Python's 1.13 stores `step` as a float tensor.
template <typename State>
GenericDict adam_state(const State& s) {
  GenericDict d = new_dict(c10::StringType::get());
  d.insert("step", at::scalar_tensor(static_cast<double>(s.step()), at::kFloat));
  d.insert("exp_avg", s.exp_avg());
  d.insert("exp_avg_sq", s.exp_avg_sq());
  if (s.max_exp_avg_sq().defined()) d.insert("max_exp_avg_sq", s.max_exp_avg_sq());
  return d;
}

template <typename Options>
void adam_group(const Options& o, GenericDict& g) {
  g.insert("lr", o.lr());
  g.insert("betas", c10::ivalue::Tuple::create(std::get<0>(o.betas()), std::get<1>(o.betas())));
  g.insert("eps", o.eps());
  g.insert("weight_decay", o.weight_decay());
  g.insert("amsgrad", o.amsgrad());
  g.insert("maximize", false);
  g.insert("foreach", IValue());
  g.insert("capturable", false);
  g.insert("differentiable", false);
  g.insert("fused", false);
}

Result<double> number(const GenericDict& d, const std::string& key) {
  auto it = d.find(key);
  if (it == d.end()) return invalid_argument("param group has no '" + key + "'");
  if (it->value().isDouble()) return it->value().toDouble();
  if (it->value().isInt()) return static_cast<double>(it->value().toInt());
  if (it->value().isBool()) return it->value().toBool() ? 1.0 : 0.0;
  return invalid_argument("param group '" + key + "' is a " + it->value().tagKind());
}

Result<at::Tensor> tensor(const GenericDict& d, const std::string& key, bool optional = false) {
  auto it = d.find(key);
  if (it == d.end() || it->value().isNone()) {
    if (optional) return at::Tensor();
    return invalid_argument("parameter state has no '" + key + "'");
  }
  if (!it->value().isTensor()) return invalid_argument("'" + key + "' is not a tensor");
  return it->value().toTensor();
}

// The group's numbers under `keys`, in order; an error names the first one missing.
Result<std::vector<double>> numbers(const GenericDict& g, std::initializer_list<const char*> keys) {
  std::vector<double> out;
  for (const char* key : keys) {
    auto v = number(g, key);
    if (!v) return v.status();
    out.push_back(*v);
  }
  return out;
}

Result<std::tuple<double, double>> betas_of(const GenericDict& g) {
  auto it = g.find("betas");
  if (it == g.end() || !(it->value().isTuple() || it->value().isList())) {
    return invalid_argument("param group has no 'betas' pair");
  }
  std::vector<IValue> b = it->value().isTuple() ? it->value().toTupleRef().elements().vec()
                                                : it->value().toListRef().vec();
  if (b.size() != 2 || !b[0].isDouble() || !b[1].isDouble()) {
    return invalid_argument("param group 'betas' is not a pair of floats");
  }
  return std::make_tuple(b[0].toDouble(), b[1].toDouble());
}

template <typename Options>
Status apply_adam_group(Options& o, const GenericDict& g) {
  auto n = numbers(g, {"lr", "eps", "weight_decay", "amsgrad"});
  if (!n) return n.status();
  auto betas = betas_of(g);
  if (!betas) return betas.status();
  o.lr((*n)[0]).eps((*n)[1]).weight_decay((*n)[2]).amsgrad((*n)[3] != 0).betas(*betas);
  return Status::ok();
}

// Applies a saved group's hyper-parameters; an error names the missing key.
Status apply_group(torch::optim::OptimizerOptions& options, const GenericDict& g) {
  if (auto* o = dynamic_cast<torch::optim::SGDOptions*>(&options)) {
    auto n = numbers(g, {"lr", "momentum", "dampening", "weight_decay", "nesterov"});
    if (!n) return n.status();
    o->lr((*n)[0]).momentum((*n)[1]).dampening((*n)[2]).weight_decay((*n)[3]).nesterov((*n)[4] !=
                                                                                       0);
    return Status::ok();
  }
  if (auto* o = dynamic_cast<torch::optim::AdamOptions*>(&options)) return apply_adam_group(*o, g);
  if (auto* o = dynamic_cast<torch::optim::AdamWOptions*>(&options)) return apply_adam_group(*o, g);
  return invalid_argument("unsupported optimizer (SGD, Adam and AdamW are)");
}

// A copy on the parameter's device that the loaded file does not share.
at::Tensor own_copy(const at::Tensor& t, c10::Device device) {
  return t.to(device, /*non_blocking=*/false, /*copy=*/true);
}

template <typename State>
Result<std::unique_ptr<torch::optim::OptimizerParamState>> adam_param_state(const GenericDict& d,
                                                                            c10::Device device) {
  auto step = tensor(d, "step");
  auto exp_avg = tensor(d, "exp_avg");
  auto exp_avg_sq = tensor(d, "exp_avg_sq");
  auto max_sq = tensor(d, "max_exp_avg_sq", true);
  for (const auto* r : {&step, &exp_avg, &exp_avg_sq, &max_sq}) {
    if (!*r) return r->status();
  }
  auto s = std::make_unique<State>();
  s->step(static_cast<std::int64_t>(step->item<double>()));
  s->exp_avg(own_copy(*exp_avg, device));
  s->exp_avg_sq(own_copy(*exp_avg_sq, device));
  if (max_sq->defined()) s->max_exp_avg_sq(own_copy(*max_sq, device));
  return std::unique_ptr<torch::optim::OptimizerParamState>(std::move(s));
}

Result<std::unique_ptr<torch::optim::OptimizerParamState>> param_state(
    const torch::optim::Optimizer& optimizer, const GenericDict& d, c10::Device device) {
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer)) {
    auto buf = tensor(d, "momentum_buffer", true);
    if (!buf) return buf.status();
    auto s = std::make_unique<torch::optim::SGDParamState>();
    if (buf->defined()) s->momentum_buffer(own_copy(*buf, device));
    return std::unique_ptr<torch::optim::OptimizerParamState>(std::move(s));
  }
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer)) {
    return adam_param_state<torch::optim::AdamParamState>(d, device);
  }
  return adam_param_state<torch::optim::AdamWParamState>(d, device);
}

}  // namespace

Result<IValue> optimizer_state_dict(const torch::optim::Optimizer& optimizer) {
  const bool sgd = dynamic_cast<const torch::optim::SGD*>(&optimizer) != nullptr;
  const bool adam = dynamic_cast<const torch::optim::Adam*>(&optimizer) != nullptr;
  const bool adamw = dynamic_cast<const torch::optim::AdamW*>(&optimizer) != nullptr;
  if (!sgd && !adam && !adamw) {
    return invalid_argument(
        "optimizer_state_dict: unsupported optimizer (SGD, Adam and AdamW are)");
  }
  GenericDict state = new_dict(c10::IntType::get());
  c10::impl::GenericList groups(c10::AnyType::get());
  std::int64_t index = 0;
  for (const auto& group : optimizer.param_groups()) {
    GenericDict g = new_dict(c10::StringType::get());
    if (sgd) {
      const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
      g.insert("lr", o.lr());
      g.insert("momentum", o.momentum());
      g.insert("dampening", o.dampening());
      g.insert("weight_decay", o.weight_decay());
      g.insert("nesterov", o.nesterov());
      g.insert("maximize", false);
      g.insert("foreach", IValue());
      g.insert("differentiable", false);
    } else if (adam) {
      adam_group(static_cast<const torch::optim::AdamOptions&>(group.options()), g);
    } else {
      adam_group(static_cast<const torch::optim::AdamWOptions&>(group.options()), g);
    }
    c10::List<std::int64_t> ids;
    for (const auto& p : group.params()) {
      auto it = optimizer.state().find(state_key(p));
      if (it != optimizer.state().end()) {
        const auto* s = it->second.get();
        if (sgd) {
          const auto& buf = static_cast<const torch::optim::SGDParamState*>(s)->momentum_buffer();
          GenericDict d = new_dict(c10::StringType::get());
          d.insert("momentum_buffer", buf.defined() ? IValue(buf) : IValue());
          state.insert(index, d);
        } else if (adam) {
          state.insert(index, adam_state(*static_cast<const torch::optim::AdamParamState*>(s)));
        } else {
          state.insert(index, adam_state(*static_cast<const torch::optim::AdamWParamState*>(s)));
        }
      }
      ids.push_back(index++);
    }
    g.insert("params", ids);
    groups.push_back(g);
  }
  GenericDict out = new_dict(c10::StringType::get());
  out.insert("state", state);
  out.insert("param_groups", groups);
  return IValue(out);
}

Status load_optimizer_state_dict(torch::optim::Optimizer& optimizer, const IValue& value) {
  auto fail = [](const std::string& m) { return invalid_argument("optimizer state: " + m); };
  if (!value.isGenericDict()) return fail("not a dict but a " + value.tagKind());
  const GenericDict top = value.toGenericDict();
  auto state_it = top.find("state");
  auto groups_it = top.find("param_groups");
  if (state_it == top.end() || !state_it->value().isGenericDict() || groups_it == top.end() ||
      !groups_it->value().isList()) {
    return fail("no 'state' dict and 'param_groups' list");
  }
  const GenericDict saved_state = state_it->value().toGenericDict();
  const auto saved_groups = groups_it->value().toListRef();
  auto& groups = optimizer.param_groups();
  if (saved_groups.size() != groups.size()) {
    return fail("the checkpoint has " + std::to_string(saved_groups.size()) +
                " parameter groups, the optimizer " + std::to_string(groups.size()));
  }
  // Validate and build everything first: a failed load changes nothing.
  std::vector<std::unique_ptr<torch::optim::OptimizerOptions>> new_options;
  std::vector<std::pair<StateKey, std::unique_ptr<torch::optim::OptimizerParamState>>> new_state;
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    if (!saved_groups[gi].isGenericDict())
      return fail("param_groups[" + std::to_string(gi) + "] is not a dict");
    const GenericDict g = saved_groups[gi].toGenericDict();
    auto params_it = g.find("params");
    if (params_it == g.end() || !params_it->value().isList()) {
      return fail("param_groups[" + std::to_string(gi) + "] has no 'params' list");
    }
    const auto ids = params_it->value().toListRef();
    for (const auto& id : ids) {
      if (!id.isInt())
        return fail("param_groups[" + std::to_string(gi) + "] 'params' holds a " + id.tagKind());
    }
    if (ids.size() != groups[gi].params().size()) {
      return fail("param_groups[" + std::to_string(gi) + "] has " + std::to_string(ids.size()) +
                  " parameters, the optimizer's group " +
                  std::to_string(groups[gi].params().size()));
    }
    auto options = groups[gi].options().clone();
    Status applied = apply_group(*options, g);
    if (!applied) return fail("param_groups[" + std::to_string(gi) + "]: " + applied.message());
    new_options.push_back(std::move(options));
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const at::Tensor& param = groups[gi].params()[k];
      auto it = saved_state.find(ids[k]);
      if (it == saved_state.end()) continue;  // no state yet for this parameter
      if (!it->value().isGenericDict()) {
        return fail("state[" + std::to_string(ids[k].toInt()) + "] is not a dict");
      }
      auto s = param_state(optimizer, it->value().toGenericDict(), param.device());
      if (!s) return fail("state[" + std::to_string(ids[k].toInt()) + "]: " + s.status().message());
      new_state.emplace_back(state_key(param), std::move(*s));
    }
  }
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    groups[gi].set_options(std::move(new_options[gi]));
  optimizer.state().clear();
  for (auto& [key, s] : new_state) optimizer.state()[key] = std::move(s);
  return Status::ok();
}

}  // namespace ddp
