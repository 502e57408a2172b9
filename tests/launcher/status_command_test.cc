// `ddprun status`: its arguments and the table it prints from the status port's JSON.
#include "launcher/status_command.h"

#include <sstream>

#include "tests/catch.h"

using namespace ddp::launcher;

namespace {

// The table with every run of spaces made one: column widths aside.
std::string collapsed(const std::string& table) {
  std::string out;
  for (char c : table) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

}  // namespace

TEST_CASE("status arguments: HOST[:PORT] [RUN_ID] [--json]", "[status]") {
  auto a = parse_status_args({"node0"});
  REQUIRE(a);
  CHECK(a->host == "node0");
  CHECK(a->port == kDefaultStatusPort);
  CHECK(!a->run_id);
  CHECK(!a->json);
  a = parse_status_args({"127.0.0.1:8080", "job-1", "--json"});
  REQUIRE(a);
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 8080);
  CHECK(a->run_id == "job-1");
  CHECK(a->json);
  a = parse_status_args({"[::1]:9000"});
  REQUIRE(a);
  CHECK(a->host == "::1");
  CHECK(a->port == 9000);
  a = parse_status_args({"::1"});
  REQUIRE(a);
  CHECK(a->host == "::1");
  CHECK(a->port == kDefaultStatusPort);
  CHECK(!parse_status_args({}));
  CHECK(!parse_status_args({"h:0"}));
  CHECK(!parse_status_args({"h:99999"}));
  CHECK(!parse_status_args({"h:x"}));
  CHECK(!parse_status_args({"h:"}));
  CHECK(!parse_status_args({"h", "a", "b"}));
  CHECK(!parse_status_args({"h", "--bogus"}));
  CHECK_THAT(parse_status_args({"h", "--bogus"}).status().message(),
             Catch::Contains("usage: ddprun status"));
}

TEST_CASE("status table of every job, and of one job with its nodes", "[status]") {
  const std::string jobs = R"({"generated_at":"x","jobs":[
    {"run_id":"job-a","state":"running","round":2,"restart_count":1,"max_restarts":3,
     "node_count":2,"world_size":4,"exit_code":null,"root_cause":null,
     "last_failure":{"reason":"worker_failed","detail":"d","at":"x","failure":
       {"rank":2,"node_key":"host-b:7","exit":"exit code 3","message":"RuntimeError: boom\nTB"}},
     "nodes":[]},
    {"run_id":"job-b","state":"finished","round":1,"restart_count":0,"max_restarts":0,
     "node_count":0,"world_size":0,"exit_code":0,"root_cause":null,"last_failure":null,
     "goodput":0.835,"stragglers":0,"straggler_ranks":[],"nodes":[]},
    {"run_id":"job-s","state":"running","round":1,"restart_count":0,"max_restarts":0,
     "node_count":2,"world_size":8,"exit_code":null,"root_cause":null,"last_failure":null,
     "goodput":0.5,"stragglers":2,"median_step_seconds":0.3,"straggler_ranks":[
       {"rank":3,"step_seconds":0.8},{"rank":5,"step_seconds":0.9}],"nodes":[]}]})";
  auto table = format_status_table(jobs);
  REQUIRE(table);
  CHECK_THAT(*table, Catch::StartsWith("RUN ID  STATE"));
  CHECK_THAT(collapsed(*table),
             Catch::Contains("\njob-a running 2 1/3 2 4 - - rank 2 on host-b:7: exit code 3"));
  CHECK_THAT(collapsed(*table), Catch::Contains("\njob-b finished (exit 0) 1 0/0 0 0 83.5% 0 -"));
  CHECK_THAT(collapsed(*table),
             Catch::Contains("\njob-s running 1 0/0 2 8 50.0% 2 (rank 3 0.80s, rank 5 0.90s; "
                             "median 0.30s) -"));
  CHECK_THAT(collapsed(*table), Catch::Contains("WORKERS GOODPUT STRAGGLERS LAST FAILURE\n"));
  CHECK_THAT(*table, Catch::Contains("rank 2 on host-b:7: exit code 3 (RuntimeError: boom)"));
  CHECK_THAT(*table, Catch::Contains("finished (exit 0)"));

  const std::string one = R"({"generated_at":"x","job":
    {"run_id":"job-a","state":"running","round":1,"restart_count":0,"max_restarts":1,
     "node_count":2,"world_size":3,"exit_code":null,"root_cause":null,"last_failure":null,
     "nodes":[
       {"node_key":"h0:1","addr":"10.0.0.1","group_rank":0,"first_rank":0,"last_rank":1,
        "local_world_size":2,"role":"participant"},
       {"node_key":"h1:1","addr":"10.0.0.2","group_rank":1,"first_rank":2,"last_rank":2,
        "local_world_size":1,"role":"participant"}]}})";
  table = format_status_table(one);
  REQUIRE(table);
  CHECK_THAT(*table, Catch::Contains("NODE  ADDRESS   GROUP RANK  RANKS  WORKERS  ROLE"));
  CHECK_THAT(*table, Catch::Contains("h0:1  10.0.0.1  0           0-1    2        participant"));
  CHECK_THAT(*table, Catch::Contains("h1:1  10.0.0.2  1           2      1        participant"));

  CHECK(table->find("failed workers") == std::string::npos);  // none in that answer

  const std::string failed = R"({"generated_at":"x","job":
    {"run_id":"job-c","state":"finished","round":1,"restart_count":0,"max_restarts":0,
     "node_count":0,"world_size":0,"exit_code":3,"root_cause":null,"last_failure":null,
     "nodes":[],"failed_worker_count":4,"failed_workers":[
       {"rank":2,"local_rank":0,"node_key":"host-b:7","exit":"exit code 3","time":"T",
        "last_lines":["step 7","ValueError: bad"],"stack_head":[]},
       {"rank":3,"local_rank":1,"node_key":"host-b:7","exit":"exit code 124","time":"T",
        "last_lines":[],"stack_head":["Current thread"]}]}})";
  table = format_status_table(failed);
  REQUIRE(table);
  CHECK_THAT(*table, Catch::EndsWith("no nodes\n\n"
                                     "failed workers of the last failed round (2 shown of 4):\n"
                                     "rank 2 (local rank 0) on host-b:7: exit code 3 at T\n"
                                     "  last lines of output:\n"
                                     "    step 7\n"
                                     "    ValueError: bad\n"
                                     "rank 3 (local rank 1) on host-b:7: exit code 124 at T\n"
                                     "  head of its stack file:\n"
                                     "    Current thread\n"));

  CHECK(!format_status_table("not json"));
  CHECK(!format_status_table("[]"));
  CHECK(format_status_table(R"({"jobs":[]})").value() == "no jobs\n");
}

TEST_CASE("ddprun status: a refused connection is one line and exit code 1", "[status]") {
  std::ostringstream out, err;
  // Port 1 on loopback: nothing listens there without root.
  const int code = run_status_command({"127.0.0.1:1"}, out, err);
  CHECK(code == 1);
  CHECK(out.str().empty());
  CHECK_THAT(err.str(), Catch::StartsWith("ddprun status: error: cannot connect to the status "
                                          "port 127.0.0.1:1"));
  CHECK(err.str().find('\n') == err.str().size() - 1);
  std::ostringstream out2, err2;
  CHECK(run_status_command({}, out2, err2) == 2);
}
