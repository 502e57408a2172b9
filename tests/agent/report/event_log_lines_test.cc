// The event log's lines (agent/event_log.h): every line parsed back and checked key by key,
// from the header keys every line starts with to each event's own keys; text that is not
// UTF-8; a default event log writes nothing.
#include <csignal>
#include <nlohmann/json.hpp>

#include "agent/report/event_log.h"
#include "tests/agent/report/event_log_fixture.h"
#include "tests/catch.h"

namespace ddp::agent {
namespace {

using namespace std::chrono_literals;
using namespace event_log_fixture;
using nlohmann::json;

struct Captured {
  Captured() : log(std::make_unique<CaptureSink>(lines), origin(), [] { return kT0; }) {}
  json line(std::size_t i) const { return json::parse(lines.at(i)); }
  std::vector<std::string> lines;
  EventLog log;
};

Round round_2() {
  Round r;
  r.round = 2;
  r.restart_count = 1;
  r.group_rank = 1;
  r.group_world_size = 2;
  r.rank_offset = 4;
  r.world_size = 8;
  r.store_addr = "10.0.0.1";
  r.store_port = 40000;
  return r;
}

TEST_CASE("event log: event times are RFC 3339 UTC with milliseconds", "[event_log]") {
  CHECK(rfc3339_utc(kT0) == "2026-11-24T22:35:00.123Z");
  CHECK(rfc3339_utc(std::chrono::system_clock::time_point{}) == "1970-01-01T00:00:00.000Z");
  CHECK(rfc3339_utc(kT0 + 877ms) == "2026-11-24T22:35:01.000Z");
}

TEST_CASE("event log: every line starts with the same keys in the same order", "[event_log]") {
  Captured c;
  c.log.join();
  c.log.round(round_2());
  REQUIRE(c.lines.size() == 2);
  const std::vector<std::string> header = {"ts",     "ts_unix",       "event",
                                           "run_id", "host",          "agent_pid",
                                           "round",  "restart_count", "group_rank"};
  for (const auto& text : c.lines) {
    CHECK(text.find('\n') == std::string::npos);
    auto j = nlohmann::ordered_json::parse(text);
    std::vector<std::string> keys;
    for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
    REQUIRE(keys.size() >= header.size());
    CHECK(std::vector<std::string>(keys.begin(), keys.begin() + 9) == header);
  }
  json join = c.line(0);
  CHECK(join["ts"] == "2026-11-24T22:35:00.123Z");
  CHECK(join["ts_unix"].get<double>() == Approx(1795559700.123));
  CHECK(join["event"] == "join");
  CHECK(join["run_id"] == "job-7");
  CHECK(join["host"] == "node-a");
  CHECK(join["agent_pid"] == 4242);
  CHECK(join["round"].is_null());  // before the first round: unknown
  CHECK(join["restart_count"].is_null());
  CHECK(join["group_rank"].is_null());
  CHECK(join["backend"] == "c10d");
  CHECK(join["endpoint"] == "10.0.0.1:29400");
  CHECK(join["min_nodes"] == 2);
  CHECK(join["max_nodes"] == 3);
  CHECK(join["nproc_per_node"] == 4);
  CHECK(join["max_restarts"] == 1);

  json round = c.line(1);
  CHECK(round["event"] == "round");
  CHECK(round["round"] == 2);
  CHECK(round["restart_count"] == 1);
  CHECK(round["group_rank"] == 1);
  CHECK(round["group_world_size"] == 2);
  CHECK(round["rank_offset"] == 4);
  CHECK(round["world_size"] == 8);
  CHECK(round["store_addr"] == "10.0.0.1");
  CHECK(round["store_port"] == 40000);
}

TEST_CASE("event log: workers started and exited: pids, ranks, exit code or signal",
          "[event_log]") {
  Captured c;
  c.log.round(round_2());
  c.log.workers_started(1, {{0, 4, 100}, {1, 5, 101}});
  c.log.worker_exited(1, 5, 101, proc::ExitStatus::exited(3));
  c.log.worker_exited(0, 4, 100, proc::ExitStatus::killed(SIGTERM));
  REQUIRE(c.lines.size() == 4);
  json started = c.line(1);
  CHECK(started["event"] == "workers_started");
  CHECK(started["round"] == 2);
  CHECK(started["attempt"] == 1);
  REQUIRE(started["workers"].size() == 2);
  CHECK(started["workers"][0] == json{{"local_rank", 0}, {"rank", 4}, {"pid", 100}});
  CHECK(started["workers"][1] == json{{"local_rank", 1}, {"rank", 5}, {"pid", 101}});
  json failed = c.line(2);
  CHECK(failed["event"] == "worker_exited");
  CHECK(failed["local_rank"] == 1);
  CHECK(failed["rank"] == 5);
  CHECK(failed["pid"] == 101);
  CHECK(failed["exit_code"] == 3);
  CHECK(failed["signal"].is_null());
  json killed = c.line(3);
  CHECK(killed["exit_code"].is_null());
  CHECK(killed["signal"] == "SIGTERM");
}

TEST_CASE("event log: a group's end and the job's failure carry the root cause's fields",
          "[event_log]") {
  Captured c;
  c.log.round(round_2());
  WorkersResult result;
  result.outcome.kind = Outcome::Kind::kFailed;
  result.failures = {wire_failure(3)};
  c.log.workers_done(result);
  membership::JobFinished finished{137, "", wire_failure(-9), {}, false};
  c.log.failure(finished);
  membership::JobFinished local{1, "the workers were stopped", std::nullopt, {}, false};
  c.log.failure(local);
  REQUIRE(c.lines.size() == 4);

  json done = c.line(1);
  CHECK(done["event"] == "workers_done");
  CHECK(done["outcome"] == "failed");
  CHECK(done["signal"].is_null());
  CHECK(done["error"].is_null());
  REQUIRE(done["failures"].size() == 1);
  json f = done["failures"][0];
  CHECK(f["host"] == "10.0.0.2");
  CHECK(f["node"] == "10.0.0.2:777");
  CHECK(f["rank"] == 6);
  CHECK(f["local_rank"] == 2);
  CHECK(f["group_rank"] == 1);
  CHECK(f["exit_code"] == 3);
  CHECK(f["signal"].is_null());
  CHECK(f["pid"] == 991);
  CHECK(f["time"] == "2026-11-24T22:35:00.500Z");
  CHECK(f["error_file"] == "/logs/attempt_1/2/error.json");
  CHECK(f["message"] == "RuntimeError: boom");

  json failure = c.line(2);
  CHECK(failure["event"] == "failure");
  CHECK(failure["exit_code"] == 137);
  CHECK(failure["reason"].is_null());
  CHECK(failure["root_cause"]["exit_code"].is_null());
  CHECK(failure["root_cause"]["signal"] == "SIGKILL");
  CHECK(failure["root_cause"]["rank"] == 6);

  json stopped = c.line(3);
  CHECK(stopped["exit_code"] == 1);
  CHECK(stopped["reason"] == "the workers were stopped");
  CHECK(stopped["root_cause"].is_null());
}

TEST_CASE("event log: a single node's failures name this host, errors and signals have their keys",
          "[event_log]") {
  Captured c;
  WorkersResult error;
  error.outcome.kind = Outcome::Kind::kError;
  error.outcome.error = io_error("cannot create attempt_0");
  membership::Failure local = wire_failure(1);
  local.node_key.clear();
  local.error_file.clear();
  local.message.clear();
  error.failures = {local};
  c.log.workers_done(error);
  WorkersResult interrupted;
  interrupted.outcome.kind = Outcome::Kind::kInterrupted;
  interrupted.outcome.signal = SIGTERM;
  c.log.workers_done(interrupted);
  c.log.signal(SIGINT);
  c.log.lost("rendezvous error: join timed out");
  c.log.finish(130, "signal");
  REQUIRE(c.lines.size() == 5);
  json e = c.line(0);
  CHECK(e["outcome"] == "error");
  CHECK(e["error"] == "cannot create attempt_0");
  CHECK(e["failures"][0]["host"] == "node-a");
  CHECK(e["failures"][0]["node"].is_null());
  CHECK(e["failures"][0]["error_file"].is_null());
  CHECK(e["failures"][0]["message"].is_null());
  CHECK(c.line(1)["outcome"] == "interrupted");
  CHECK(c.line(1)["signal"] == "SIGTERM");
  CHECK(c.line(1)["failures"] == json::array());
  CHECK(c.line(2)["event"] == "signal");
  CHECK(c.line(2)["signal"] == "SIGINT");
  CHECK(c.line(3)["event"] == "lost");
  CHECK(c.line(3)["reason"] == "rendezvous error: join timed out");
  CHECK(c.line(4)["event"] == "finish");
  CHECK(c.line(4)["exit_code"] == 130);
  CHECK(c.line(4)["why"] == "signal");
  CHECK(c.line(4)["goodput"].is_null());  // the job's end is unknown here
  CHECK(c.line(4)["wall_seconds"].is_null());
}

TEST_CASE("event log: a hang names its kind, ranks and what each did last", "[event_log]") {
  Captured c;
  HangReport silent;
  silent.local_ranks = {1};
  silent.descriptions = {"rank 1 last beat at step 4 (3.0 s ago)"};
  c.log.workers_hung(silent);
  HangReport timer;
  timer.kind = HangReport::Kind::kTimer;
  timer.local_ranks = {0};
  timer.descriptions = {"timer 'step' expired"};
  timer.pid = 55;
  timer.scope = "step";
  timer.signal = SIGKILL;
  c.log.workers_hung(timer);
  json s = c.line(0);
  CHECK(s["event"] == "workers_hung");
  CHECK(s["kind"] == "silent");
  CHECK(s["local_ranks"] == json::array({1}));
  CHECK(s["descriptions"][0] == "rank 1 last beat at step 4 (3.0 s ago)");
  CHECK(s["pid"].is_null());
  CHECK(s["scope"].is_null());
  CHECK(s["signal"].is_null());
  json t = c.line(1);
  CHECK(t["kind"] == "timer");
  CHECK(t["pid"] == 55);
  CHECK(t["scope"] == "step");
  CHECK(t["signal"] == "SIGKILL");
}

TEST_CASE("event log: a restart carries the round it follows and whether it used a restart",
          "[event_log]") {
  Captured c;
  Round first = round_2();
  first.round = 1;
  first.restart_count = 0;
  c.log.round(first);
  c.log.restart(round_2(), 1, 0);
  Round again = round_2();
  again.round = 3;
  c.log.restart(again, 2, 1);  // a node arrived: same restart count
  json r = c.line(1);
  CHECK(r["event"] == "restart");
  CHECK(r["round"] == 2);  // the new round's keys already
  CHECK(r["restart_count"] == 1);
  CHECK(r["previous_round"] == 1);
  CHECK(r["previous_restart_count"] == 0);
  CHECK(r["counted"] == true);
  CHECK(c.line(2)["counted"] == false);
}

TEST_CASE("event log: a straggler names its rank, step time, the median and the removal",
          "[event_log]") {
  Captured c;
  c.log.round(round_2());
  c.log.straggler({2, 5, 450'000us, 150'000us, 3, true});
  json s = c.line(1);
  CHECK(s["event"] == "straggler");
  CHECK(s["round"] == 2);
  CHECK(s["rank"] == 5);
  CHECK(s["step_time_seconds"] == 0.45);
  CHECK(s["median_seconds"] == 0.15);
  CHECK(s["reports"] == 3);
  CHECK(s["removed"] == true);
}

TEST_CASE("event log: text that is not UTF-8 does not break a line", "[event_log]") {
  Captured c;
  c.log.lost(std::string("bad \xff\xfe bytes\nand a newline"));
  REQUIRE(c.lines.size() == 1);
  CHECK(c.lines[0].find('\n') == std::string::npos);
  CHECK(c.line(0)["reason"].get<std::string>().find("bytes") != std::string::npos);
}

TEST_CASE("event log: a default event log writes nothing", "[event_log]") {
  EventLog none;
  CHECK_FALSE(none.enabled());
  none.join();
  none.round(round_2());
  none.finish(0, "job_finished");
}

}  // namespace
}  // namespace ddp::agent
