// GPU discovery and selection with fake and /proc-style inventories.
#include "launcher/gpu_selection.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "launcher/gpu_inventory.h"
#include "tests/catch.h"
#include "tests/launcher/fake_gpu_inventory.h"

using namespace ddp::launcher;
using Cvd = std::optional<std::string>;

TEST_CASE("visible_gpus follows CUDA_VISIBLE_DEVICES like CUDA", "[launcher]") {
  CHECK(visible_gpus(3, std::nullopt) == std::vector<std::string>{"0", "1", "2"});
  CHECK(visible_gpus(0, std::nullopt).empty());
  CHECK(visible_gpus(8, Cvd("4,5,6,7")) == std::vector<std::string>{"4", "5", "6", "7"});
  CHECK(visible_gpus(8, Cvd("3,1")) == std::vector<std::string>{"3", "1"});
  CHECK(visible_gpus(8, Cvd("")).empty());
  CHECK(visible_gpus(8, Cvd("-1")).empty());
  // The list ends at the first invalid entry: out of range, junk or repeated.
  CHECK(visible_gpus(4, Cvd("1,9,2")) == std::vector<std::string>{"1"});
  CHECK(visible_gpus(4, Cvd("2,x,3")) == std::vector<std::string>{"2"});
  CHECK(visible_gpus(4, Cvd("2,2,3")) == std::vector<std::string>{"2"});
  CHECK(visible_gpus(4, Cvd("GPU-abc,1")) == std::vector<std::string>{"GPU-abc", "1"});
}

TEST_CASE("count_for_device_word handles gpu and cpu and auto", "[launcher]") {
  FakeGpuInventory none(0);
  FakeGpuInventory eight(8);
  CHECK(*count_for_device_word("cpu", eight, std::nullopt, 12) == 12);
  CHECK(*count_for_device_word("gpu", eight, std::nullopt, 12) == 8);
  CHECK(*count_for_device_word("auto", eight, std::nullopt, 12) == 8);
  CHECK(*count_for_device_word("auto", none, std::nullopt, 12) == 12);
  CHECK(*count_for_device_word("gpu", eight, Cvd("2,3"), 12) == 2);
  CHECK(*count_for_device_word("auto", eight, Cvd(""), 12) == 12);
  auto no_gpu = count_for_device_word("gpu", none, std::nullopt, 12);
  REQUIRE_FALSE(no_gpu);
  CHECK(no_gpu.status().message().find("no GPU is found") != std::string::npos);
  CHECK(no_gpu.status().message().find("use cpu or auto") != std::string::npos);
  auto hidden = count_for_device_word("gpu", eight, Cvd(""), 12);
  REQUIRE_FALSE(hidden);
  CHECK(hidden.status().message().find("CUDA_VISIBLE_DEVICES=") != std::string::npos);
  CHECK_FALSE(count_for_device_word("tpu", eight, std::nullopt, 12));
}

TEST_CASE("select_gpu_ids maps ids through the visible set", "[launcher]") {
  FakeGpuInventory eight(8);
  CHECK(*select_gpu_ids("1,6,3", eight, std::nullopt) == std::vector<int>{1, 6, 3});
  CHECK(*select_gpu_ids("1,3", eight, Cvd("4,5,6,7")) == std::vector<int>{5, 7});
  CHECK(*select_gpu_ids("0", eight, Cvd("7")) == std::vector<int>{7});
}

TEST_CASE("select_gpu_ids errors name the problem", "[launcher]") {
  FakeGpuInventory none(0);
  FakeGpuInventory four(4);
  auto message = [](const ddp::Result<std::vector<int>>& r) {
    REQUIRE_FALSE(r);
    CHECK(r.status().code() == ddp::ErrorCode::kInvalidArgument);
    return r.status().message();
  };
  CHECK_THAT(message(select_gpu_ids("1,1", four, std::nullopt)), Catch::Contains("listed twice"));
  CHECK_THAT(message(select_gpu_ids("-1", four, std::nullopt)), Catch::Contains("negative"));
  CHECK_THAT(message(select_gpu_ids("a,b", four, std::nullopt)), Catch::Contains("'a'"));
  CHECK_THAT(message(select_gpu_ids("", four, std::nullopt)), Catch::Contains("--gpu-ids"));
  CHECK_THAT(message(select_gpu_ids("1,6,3", four, std::nullopt)),
             Catch::Contains("GPU 6 does not exist") && Catch::Contains("0 to 3"));
  CHECK_THAT(
      message(select_gpu_ids("2", four, Cvd("0,1"))),
      Catch::Contains("GPU 2 does not exist") && Catch::Contains("CUDA_VISIBLE_DEVICES=0,1"));
  CHECK_THAT(message(select_gpu_ids("0", none, std::nullopt)), Catch::Contains("no usable GPU"));
  CHECK_THAT(message(select_gpu_ids("0", four, Cvd("GPU-1234"))), Catch::Contains("UUID"));
}

TEST_CASE("ProcGpuInventory counts gpus/* entries", "[launcher]") {
  auto root =
      std::filesystem::temp_directory_path() / ("ddprun-proc-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  CHECK(*ProcGpuInventory(root).physical_count() == 0);  // no driver at all
  for (const char* bus : {"0000:01:00.0", "0000:02:00.0", "0000:81:00.0"}) {
    std::filesystem::create_directories(root / "gpus" / bus);
    std::ofstream(root / "gpus" / bus / "information") << "Model: Fake GPU\n";
  }
  CHECK(*ProcGpuInventory(root).physical_count() == 3);
  auto from_env = make_system_gpu_inventory({{kProcNvidiaEnv, root.string()}});
  CHECK(*from_env->physical_count() == 3);
  CHECK(from_env->source() == (root / "gpus").string());
  std::filesystem::remove_all(root);
}

TEST_CASE("the system inventory answers on a machine without NVIDIA GPUs", "[launcher]") {
  // This machine has neither NVML nor /proc/driver/nvidia; the answer must be a count, not an
  // error, so that `auto` falls back to CPUs.
  auto system = make_system_gpu_inventory({});
  auto count = system->physical_count();
  REQUIRE(count);
  CHECK(*count >= 0);
}
