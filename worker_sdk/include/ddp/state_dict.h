// Checkpoints that Python's torch.load reads and that read what Python's torch.save wrote.
//
//   ddp::save_python_file(ddp::model_state_dict(*net), "model.pt");   // C++
//   model.load_state_dict(torch.load("model.pt"))                     # Python
//
//   torch.save(model.state_dict(), "model.pt")                        # Python (DDP or not)
//   ddp::load_state_dict_file(*net, "model.pt");                      // C++
//
// A state_dict is Python's: parameter and buffer names joined by "." (no "module." prefix),
// in Python's order (each module's own parameters, then its buffers, then its children), the
// tensors detached. Files are the zip format of torch.save (PyTorch >= 1.6); C++ files load in
// Python as plain dicts, which load_state_dict accepts. Reading maps every tensor to the CPU
// (map_location="cpu"); loading into a module copies into its tensors on their own device.
//
// Optimizers: Python's layout {"state": {index: {...}}, "param_groups": [{..., "params":
// [index...]}]}, indices counted across groups in order, for torch::optim::SGD, Adam and AdamW
// (SGD's momentum_buffer; Adam's step, exp_avg, exp_avg_sq, max_exp_avg_sq), so the same
// optimizer class in Python resumes from it and the reverse. Other optimizers: kInvalidArgument.
//
// Errors are Status values, never exceptions: a missing or unreadable file (kNotFound / kIo), a
// file that is not a torch.save archive or holds something else than a state_dict
// (kInvalidArgument), a state_dict of another architecture (kInvalidArgument naming the first
// mismatch in the module's order: a missing key, a shape, then an unexpected key). A failed
// load changes nothing. Plain functions; call them from one thread per module/optimizer.
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <string>

#include "common/status.h"

namespace ddp {

// Ordered name -> tensor map (c10::Dict keeps insertion order).
using StateDict = c10::Dict<std::string, at::Tensor>;

StateDict model_state_dict(const torch::nn::Module& module);

// Copies `state` into the module's parameters and buffers (strict, as Python's default).
// Accepts names with a leading "module." (a state_dict of Python's DDP wrapper).
Status load_model_state_dict(torch::nn::Module& module, const StateDict& state);

// Python's optimizer.state_dict() layout, as a generic IValue dict.
Result<c10::IValue> optimizer_state_dict(const torch::optim::Optimizer& optimizer);
Status load_optimizer_state_dict(torch::optim::Optimizer& optimizer, const c10::IValue& state);

// torch.save / torch.load of a value made of dicts, lists, tuples, strings, numbers, None and
// tensors. Saving writes a temporary file beside `path` and renames it over `path`.
Status save_python_file(const c10::IValue& value, const std::string& path);
Result<c10::IValue> load_python_file(const std::string& path);

// A dict IValue with string keys and tensor values (what load_python_file gives for a
// state_dict) as a StateDict; `what` names it in the error ("model_state_dict of x.pt").
Result<StateDict> as_state_dict(const c10::IValue& value, const std::string& what);

// load_python_file + as_state_dict + load_model_state_dict.
Status load_state_dict_file(torch::nn::Module& module, const std::string& path);

}  // namespace ddp
