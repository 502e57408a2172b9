// Host-list expansion checked against Slurm itself: `scontrol show hostnames` (Debian
// slurm-client; it needs only a slurm.conf, no controller) expands a fixed corpus and a few
// hundred random lists (fixed seed), and ddprun must produce the same hosts in the same order.
// Skipped with a warning where scontrol is not installed.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "launcher/cluster/host_list.h"
#include "launcher/cluster/shell_quote.h"
#include "tests/catch.h"
#include "tests/cluster/run_shell.h"
#include "tests/skip.h"

using namespace ddp::launcher::cluster;
using ddp::launcher::cluster::testing::run_shell;
namespace fs = std::filesystem;

namespace {

constexpr const char* kScontrol = "/usr/bin/scontrol";

// A random token in the forms Slurm writes and reads: prefix, 1-3 bracket groups of single
// numbers and ranges with random zero padding, or a plain name.
std::string random_token(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::string token;
  for (int i = pick(1, 3); i > 0; --i) token += static_cast<char>('a' + pick(0, 25));
  if (pick(0, 4) == 0) return token + std::to_string(pick(0, 120));  // a plain host
  int groups = pick(1, 3);
  for (int g = 0; g < groups; ++g) {
    if (g > 0 || pick(0, 1) == 0) token += pick(0, 1) ? "-" : "x";
    token += '[';
    for (int item = pick(1, 2); item > 0; --item) {
      int lo = pick(0, 120);
      std::string lo_text = std::to_string(lo);
      lo_text.insert(0, static_cast<std::size_t>(pick(0, 2)), '0');
      token += lo_text;
      if (pick(0, 2) != 0) token.append(1, '-').append(std::to_string(lo + pick(0, 3)));
      if (item > 1) token += ',';
    }
    token += ']';
  }
  return token;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    out.push_back(text.substr(start, end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("host lists expand exactly as Slurm's scontrol expands them", "[cluster][slurm]") {
  if (access(kScontrol, X_OK) != 0) {
    ddp::testing::skip("scontrol is not installed (Debian slurm-client)");
  }
  fs::path conf = fs::temp_directory_path() / ("ddp-slurm-" + std::to_string(getpid()) + ".conf");
  std::ofstream(conf) << "ClusterName=ddptest\nSlurmctldHost=localhost\n"
                         "NodeName=localhost CPUs=1 State=UNKNOWN\n"
                         "PartitionName=p Nodes=localhost Default=YES\n";
  std::vector<std::string> lists = {"node[01-04,07],gpu-a",
                                    "rack[1-2]-node[01-02]",
                                    "a[1-2]b[1-2]c[1-2]",
                                    "n[1-010],n[08-11],n[98-101]",
                                    "x-[1-2] y[3]\tz,n[7,1-2],n1,n[1-2]",
                                    "gpu-a"};
  std::mt19937 rng(20261121);
  std::string big;
  for (int i = 0; i < 300; ++i) {
    if (i > 0) big.push_back(',');
    big.append(random_token(rng));
  }
  lists.push_back(big);
  for (const auto& list : lists) {
    INFO(list);
    std::string slurm =
        run_shell("/bin/sh", "SLURM_CONF=" + shell_quote(conf.string()) + " " + kScontrol +
                                 " show hostnames " + shell_quote(list));
    auto ours = expand_host_list(list, "list");
    REQUIRE(ours);
    CHECK(*ours == lines(slurm));
    CHECK(ours->size() >= 1);
  }
  fs::remove(conf);
}
