// The C++ half of the checkpoint interop tests with Python (test_worker_sdk_checkpoint.py). The
// model is Sequential(Linear(6, 5), BatchNorm1d(5), ReLU(), Linear(5, 2)) with SGD(lr 0.1, momentum
// 0.9); step k (from 0) trains on linspace(-1, 1, 48).view(8, 6) * (k + 1) to minimise the
// mean square of the output. Tensors are printed as JSON {name: hex of their bytes}.
//   interop_probe train-save DIR      3 steps, write DIR/model.pt (state_dict) and DIR/ckpt.pt
//                                     ({model_state_dict, optimizer_state_dict, epoch: 3});
//                                     print {"model": ..., "momentum": [...]}
//   interop_probe resume CKPT STEPS   load a Python-written general checkpoint, print the
//                                     loaded tensors, train STEPS more steps, print the model
//   interop_probe load MODEL          load a state_dict; print "loaded" or the error (exit 1)
#include <torch/torch.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "ddp/state_dict.h"

namespace {

torch::nn::Sequential make_net() {
  torch::manual_seed(0);
  return torch::nn::Sequential(torch::nn::Linear(6, 5), torch::nn::BatchNorm1d(5),
                               torch::nn::ReLU(), torch::nn::Linear(5, 2));
}

void train(torch::nn::Sequential& net, torch::optim::SGD& opt, int from, int to) {
  for (int k = from; k < to; ++k) {
    opt.zero_grad();
    net->forward(torch::linspace(-1, 1, 48).view({8, 6}) * (k + 1)).pow(2).mean().backward();
    opt.step();
  }
}

std::string hex(const torch::Tensor& t) {
  auto c = t.contiguous().cpu();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  std::string out;
  char buf[3];
  for (std::size_t i = 0; i < c.nbytes(); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", p[i]);
    out += buf;
  }
  return out;
}

nlohmann::json model_json(const torch::nn::Module& net) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& e : ddp::model_state_dict(net)) out[e.key()] = hex(e.value());
  return out;
}

nlohmann::json momentum_json(const torch::optim::SGD& opt) {
  nlohmann::json out = nlohmann::json::array();
  const auto& state = ddp::optimizer_state_dict(opt).value().toGenericDict().at("state");
  for (const auto& e : state.toGenericDict()) {
    out.push_back(hex(e.value().toGenericDict().at("momentum_buffer").toTensor()));
  }
  return out;
}

int fail(const ddp::Status& s) {
  std::printf("%s\n", s.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 2 ? argv[1] : "";
  auto net = make_net();
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  if (mode == "train-save") {
    const std::string dir = argv[2];
    train(net, opt, 0, 3);
    if (auto s = ddp::save_python_file(ddp::model_state_dict(*net), dir + "/model.pt"); !s)
      return fail(s);
    c10::impl::GenericDict ckpt(c10::StringType::get(), c10::AnyType::get());
    ckpt.insert("model_state_dict", ddp::model_state_dict(*net));
    ckpt.insert("optimizer_state_dict", ddp::optimizer_state_dict(opt).value());
    ckpt.insert("epoch", 3);
    if (auto s = ddp::save_python_file(ckpt, dir + "/ckpt.pt"); !s) return fail(s);
    std::printf("%s\n",
                nlohmann::json({{"model", model_json(*net)}, {"momentum", momentum_json(opt)}})
                    .dump()
                    .c_str());
    return 0;
  }
  if (mode == "resume" && argc > 3) {
    auto doc = ddp::load_python_file(argv[2]);
    if (!doc) return fail(doc.status());
    const auto d = doc->toGenericDict();
    auto state = ddp::as_state_dict(d.at("model_state_dict"), "model_state_dict");
    if (!state) return fail(state.status());
    if (auto s = ddp::load_model_state_dict(*net, *state); !s) return fail(s);
    if (auto s = ddp::load_optimizer_state_dict(opt, d.at("optimizer_state_dict")); !s)
      return fail(s);
    const int epoch = static_cast<int>(d.at("epoch").toInt());
    nlohmann::json loaded = {{"model", model_json(*net)}, {"momentum", momentum_json(opt)}};
    train(net, opt, epoch, epoch + std::stoi(argv[3]));
    std::printf("%s\n",
                nlohmann::json({{"loaded", loaded}, {"trained", model_json(*net)}}).dump().c_str());
    return 0;
  }
  if (mode == "load") {
    if (auto s = ddp::load_state_dict_file(*net, argv[2]); !s) return fail(s);
    std::printf("loaded\n");
    return 0;
  }
  std::fprintf(stderr, "usage: interop_probe train-save DIR | resume CKPT STEPS | load MODEL\n");
  return 2;
}
