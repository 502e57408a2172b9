// torchrun's ${local_rank} macro in worker arguments, checked against Python's
// string.Template(arg).safe_substitute(local_rank=3) (values taken from Python 3.11).
#include "agent/workers/worker_args.h"

#include "tests/catch.h"

using ddp::agent::substitute_local_rank;

TEST_CASE("worker arguments substitute ${local_rank} as torchrun does", "[agent]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--local_rank=${local_rank}", "--local_rank=3"},
      {"$local_rank", "3"},
      {"${local_rank}${local_rank}", "33"},
      {"$local_rank_x", "$local_rank_x"},
      {"$$local_rank", "$local_rank"},
      {"a$", "a$"},
      {"${local_rank", "${local_rank"},
      {"${x}", "${x}"},
      {"$1", "$1"},
      {"$LOCAL_RANK", "$LOCAL_RANK"},
      {"cost $5", "cost $5"},
      {"plain", "plain"},
      {"", ""},
  };
  for (const auto& [in, want] : cases) {
    INFO(in);
    CHECK(substitute_local_rank(in, 3) == want);
  }
  CHECK(substitute_local_rank(
            std::vector<std::string>{"python3", "-u", "a.py", "--local-rank=$local_rank"}, 12) ==
        std::vector<std::string>{"python3", "-u", "a.py", "--local-rank=12"});
}

TEST_CASE("workers run Python when argv[0]'s file name says python", "[agent]") {
  using ddp::agent::runs_python;
  CHECK(runs_python({"python3", "train.py"}));
  CHECK(runs_python({"/usr/bin/python3.11", "-u", "x.py"}));
  CHECK(runs_python({"/x/scripts/torch2-python", "x.py"}));
  CHECK_FALSE(runs_python({"/opt/bin/worker", "python"}));
  CHECK_FALSE(runs_python({"/opt/python/bin/worker"}));
  CHECK_FALSE(runs_python({}));
}
