// Python-compatible state_dicts: names and order, round trips through torch.save-format files,
// mismatch messages, optimizer layouts, and the pickle rewrite for Python's OrderedDict.
#include "ddp/state_dict.h"

#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>

#include "tests/catch.h"
#include "worker_sdk/src/pickle_rewrite.h"

namespace {

torch::nn::Sequential make_net(std::uint64_t seed, int hidden = 5) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(6, hidden), torch::nn::BatchNorm1d(hidden),
                               torch::nn::ReLU(),
                               torch::nn::Linear(torch::nn::LinearOptions(hidden, 2).bias(false)));
}

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("ddp_sd_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void step(torch::nn::Sequential& net, torch::optim::Optimizer& opt) {
  opt.zero_grad();
  net->forward(torch::linspace(-1, 1, 48).view({8, 6})).pow(2).mean().backward();
  opt.step();
}

}  // namespace

TEST_CASE("state_dict: Python's names and order, undefined slots skipped") {
  auto net = make_net(1);
  ddp::StateDict sd = ddp::model_state_dict(*net);
  std::vector<std::string> keys;
  for (const auto& e : sd) keys.push_back(e.key());
  CHECK(keys == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias",
                                         "1.running_mean", "1.running_var", "1.num_batches_tracked",
                                         "3.weight"});
}

TEST_CASE("state_dict: file round trip is bit-exact, accepts a module. prefix") {
  auto net = make_net(1);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  step(net, opt);
  const std::string path = temp_file("model.pt");
  ddp::StateDict prefixed;
  for (const auto& e : ddp::model_state_dict(*net)) prefixed.insert("module." + e.key(), e.value());
  REQUIRE(ddp::save_python_file(prefixed, path).is_ok());
  auto other = make_net(2);
  REQUIRE(ddp::load_state_dict_file(*other, path).is_ok());
  auto a = ddp::model_state_dict(*net), b = ddp::model_state_dict(*other);
  for (const auto& e : a) CHECK(torch::equal(e.value(), b.at(e.key())));
  std::filesystem::remove(path);
}

TEST_CASE("state_dict: another architecture fails naming the first mismatch, changes nothing") {
  auto net = make_net(1);
  auto before = net->parameters()[0].clone();
  auto wider = make_net(2, 7);
  ddp::Status s = ddp::load_model_state_dict(*net, ddp::model_state_dict(*wider));
  CHECK(s.code() == ddp::ErrorCode::kInvalidArgument);
  CHECK(s.message() == "size mismatch for '0.weight': the checkpoint has [7, 6], the model [5, 6]");
  CHECK(torch::equal(net->parameters()[0], before));

  ddp::StateDict missing = ddp::model_state_dict(*make_net(3));
  REQUIRE(missing.erase("1.running_var") == 1);
  CHECK(ddp::load_model_state_dict(*net, missing).message() ==
        "missing key '1.running_var' in the checkpoint (model shape [5])");
  ddp::StateDict extra = ddp::model_state_dict(*make_net(3));
  extra.insert("head.weight", torch::zeros({1}));
  CHECK(ddp::load_model_state_dict(*net, extra).message() ==
        "unexpected key 'head.weight' in the checkpoint: not a parameter or buffer of the model");
}

TEST_CASE("state_dict: files that are not state_dicts are named") {
  auto net = make_net(1);
  CHECK(ddp::load_state_dict_file(*net, temp_file("absent.pt")).code() ==
        ddp::ErrorCode::kNotFound);
  const std::string path = temp_file("list.pt");
  REQUIRE(ddp::save_python_file(c10::IValue(std::vector<int64_t>{1, 2}), path).is_ok());
  ddp::Status s = ddp::load_state_dict_file(*net, path);
  CHECK(s.code() == ddp::ErrorCode::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("not a dict of tensors"));
  std::filesystem::remove(path);
}

TEST_CASE("state_dict: optimizer state round trips for SGD and Adam, others are refused") {
  auto net = make_net(1);
  auto twin = make_net(1);
  SECTION("SGD") {
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    torch::optim::SGD twin_opt(twin->parameters(), torch::optim::SGDOptions(0.5));
    step(net, opt);
    step(twin, twin_opt);
    REQUIRE(ddp::load_model_state_dict(*twin, ddp::model_state_dict(*net)).is_ok());
    auto state = ddp::optimizer_state_dict(opt);
    REQUIRE(state.is_ok());
    REQUIRE(ddp::load_optimizer_state_dict(twin_opt, *state).is_ok());
    step(net, opt);
    step(twin, twin_opt);  // the same step: lr and momentum buffers came along
    CHECK(torch::equal(net->parameters()[0], twin->parameters()[0]));
  }
  SECTION("Adam") {
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(0.01).amsgrad(true));
    torch::optim::Adam twin_opt(twin->parameters(), torch::optim::AdamOptions(0.5));
    step(net, opt);
    auto state = ddp::optimizer_state_dict(opt);
    REQUIRE(state.is_ok());
    const std::string path = temp_file("adam.pt");
    REQUIRE(ddp::save_python_file(*state, path).is_ok());
    auto loaded = ddp::load_python_file(path);
    REQUIRE(loaded.is_ok());
    REQUIRE(ddp::load_model_state_dict(*twin, ddp::model_state_dict(*net)).is_ok());
    REQUIRE(ddp::load_optimizer_state_dict(twin_opt, *loaded).is_ok());
    step(net, opt);
    step(twin, twin_opt);
    CHECK(torch::equal(net->parameters()[0], twin->parameters()[0]));
    std::filesystem::remove(path);
  }
  SECTION("RMSprop") {
    torch::optim::RMSprop opt(net->parameters(), torch::optim::RMSpropOptions(0.01));
    CHECK(ddp::optimizer_state_dict(opt).status().code() == ddp::ErrorCode::kInvalidArgument);
  }
}

// The bytes of a literal, NULs included.
template <std::size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

TEST_CASE("pickle rewrite: OrderedDict() becomes a dict, BUILD goes with its argument") {
  // Python 3: pickle.dumps(od, protocol=2) for od = OrderedDict(a=1) with od._metadata = {},
  // then a second OrderedDict() through the memo (BINGET 0) in a tuple:
  // PROTO 2, GLOBAL, BINPUT 0, EMPTY_TUPLE, REDUCE, BINPUT 1, MARK 'a' 1 SETITEMS,
  // {'_metadata': {}} BUILD, BINGET 0, EMPTY_TUPLE, REDUCE, TUPLE2, STOP.
  const std::string in = bytes(
                             "\x80\x02"
                             "ccollections\nOrderedDict\nq\x00)Rq\x01") +
                         bytes(
                             "(X\x01\x00\x00\x00"
                             "aK\x01u") +
                         bytes("}q\x02X\t\x00\x00\x00_metadataq\x03}sb") + bytes("h\x00)R\x86.");
  auto out = ddp::detail::rewrite_python_pickle(in);
  REQUIRE(out.is_ok());
  CHECK(*out == bytes("\x80\x02"
                      "}q\x01") +
                    bytes("(X\x01\x00\x00\x00"
                          "aK\x01u") +
                    bytes("}\x86."));
  // Single SETITEM / APPEND get a MARK before their operands; a 2-byte LONG1 grows to 8.
  CHECK(*ddp::detail::rewrite_python_pickle(bytes("\x80\x02}K\x01]K\x02"
                                                  "as.")) == bytes("\x80\x02}(K\x01](K\x02"
                                                                   "eu."));
  CHECK(*ddp::detail::rewrite_python_pickle(bytes("\x80\x02\x8a\x02\x00\x80.")) ==
        bytes("\x80\x02\x8a\x08\x00\x80\xff\xff\xff\xff\xff\xff."));
  // A value first memoized inside the dropped state cannot be reused later.
  const std::string reuse = bytes(
                                "\x80\x02}(X\x01\x00\x00\x00"
                                "aq\x05K\x01ub") +
                            bytes("h\x05.");
  CHECK(ddp::detail::rewrite_python_pickle("\x80\x02N}" + reuse.substr(2)).status().message() ==
        "the pickle reuses a value (memo 5) from object attributes that cannot be read here");
  CHECK(ddp::detail::rewrite_python_pickle("\x80\x04\x95").status().message() ==
        "pickle protocol 4 (opcode 0x95 at offset 2) is not supported; save with torch.save's "
        "default protocol 2");
  CHECK(ddp::detail::rewrite_python_pickle("Z").status().message() ==
        "unknown or truncated pickle opcode 0x5a at offset 0");
  CHECK(ddp::detail::rewrite_python_pickle("\x80\x02u").status().message() ==
        "malformed pickle: opcode 0x75 at offset 2 does not match the stack");
}
