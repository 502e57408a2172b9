// ddp::spawn's arithmetic (the processes themselves: tests/integration/worker_sdk).
#include "ddp/spawn.h"

#include "tests/catch.h"

TEST_CASE("spawn topology: world = nodes x gpus, ranks start at nr x gpus") {
  auto t = ddp::spawn_topology({.nprocs = 4, .nodes = 3, .node_rank = 2});
  REQUIRE(t.is_ok());
  CHECK(t->world_size == 12);
  CHECK(t->first_rank == 8);
  CHECK(ddp::spawn_topology({.nprocs = 0}).status().message() ==
        "spawn: nprocs must be >= 1, not 0");
  CHECK(ddp::spawn_topology({.nprocs = 2, .nodes = 2, .node_rank = 2}).status().message() ==
        "spawn: node rank (--nr) 2 is outside [0, 2)");
}

TEST_CASE("spawn: several nodes need a fixed port, not a spawned worker here") {
  auto r = ddp::run_spawned({.nprocs = 1, .nodes = 2, .node_rank = 1});
  CHECK(r.status().code() == ddp::ErrorCode::kInvalidArgument);
  CHECK_FALSE(ddp::is_spawned_worker());
}
