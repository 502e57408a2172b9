// The sampler must match torch.utils.data.DistributedSampler index for index. The expected
// lists come from running PyTorch itself (Debian's python3-torch), not from pasted output.
#include "ddp/sampler.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/catch.h"

namespace {

constexpr const char* kScript = R"PY(
import json, sys
from torch.utils.data import DistributedSampler
cases = []
for n in (0, 1, 5, 10, 16, 101, 1000):
    for replicas in (1, 2, 3, 4, 8):
        for seed in (0, 1234):
            for epoch in (0, 3):
                for drop_last in (False, True):
                    for shuffle in (True, False):
                        if not shuffle and (seed, epoch) != (0, 0):
                            continue
                        ranks = []
                        for r in range(replicas):
                            s = DistributedSampler(range(n), num_replicas=replicas, rank=r,
                                                   shuffle=shuffle, seed=seed, drop_last=drop_last)
                            s.set_epoch(epoch)
                            ranks.append(list(s))
                        cases.append(dict(n=n, replicas=replicas, seed=seed, epoch=epoch,
                                          drop_last=drop_last, shuffle=shuffle, ranks=ranks))
json.dump(cases, sys.stdout)
)PY";

nlohmann::json pytorch_reference() {
  auto script = std::filesystem::temp_directory_path() /
                ("ddp_sampler_ref_" + std::to_string(::getpid()) + ".py");
  std::ofstream(script) << kScript;
  std::string command = std::string(DDP_TEST_PYTHON) + " " + script.string();
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[65536];
  for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, got);
  int status = ::pclose(pipe);
  std::filesystem::remove(script);
  INFO("command: " << command);
  REQUIRE(status == 0);
  return nlohmann::json::parse(out);
}

}  // namespace

TEST_CASE("sampler: identical to torch.utils.data.DistributedSampler") {
  nlohmann::json cases = pytorch_reference();
  // 7 sizes x 5 world sizes x (2 seeds x 2 epochs x 2 drop_last shuffled + 2 unshuffled).
  REQUIRE(cases.size() == 7u * 5u * 10u);
  std::size_t compared = 0;
  for (const auto& c : cases) {
    for (int r = 0; r < c["replicas"].get<int>(); ++r) {
      ddp::DistributedSampler sampler({.dataset_size = c["n"].get<std::int64_t>(),
                                       .num_replicas = c["replicas"].get<int>(),
                                       .rank = r,
                                       .shuffle = c["shuffle"].get<bool>(),
                                       .seed = c["seed"].get<std::uint64_t>(),
                                       .drop_last = c["drop_last"].get<bool>()});
      sampler.set_epoch(c["epoch"].get<std::int64_t>());
      auto expected = c["ranks"][static_cast<std::size_t>(r)].get<std::vector<std::int64_t>>();
      INFO("n=" << c["n"] << " replicas=" << c["replicas"] << " rank=" << r << " seed=" << c["seed"]
                << " epoch=" << c["epoch"] << " drop_last=" << c["drop_last"]
                << " shuffle=" << c["shuffle"]);
      REQUIRE(sampler.indices() == expected);
      REQUIRE(sampler.num_samples() == static_cast<std::int64_t>(expected.size()));
      ++compared;
    }
  }
  CHECK(compared > 1000);
}

TEST_CASE("sampler: epochs reshuffle, ranks partition, bad options are rejected") {
  ddp::DistributedSampler a({.dataset_size = 64, .num_replicas = 2, .rank = 0, .seed = 7});
  auto epoch0 = a.indices();
  a.set_epoch(1);
  CHECK(a.indices() != epoch0);
  CHECK_THROWS_WITH(ddp::DistributedSampler({.dataset_size = 4, .num_replicas = 2, .rank = 2}),
                    Catch::Contains("rank 2 is outside [0, 2)"));
  CHECK_THROWS_WITH(ddp::DistributedSampler({.dataset_size = 4, .num_replicas = 0}),
                    Catch::Contains("num_replicas must be >= 1"));
  CHECK_THROWS_WITH(ddp::DistributedSampler({.dataset_size = -1}),
                    Catch::Contains("dataset_size must be >= 0"));
}
