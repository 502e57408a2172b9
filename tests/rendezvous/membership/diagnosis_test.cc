// A failed worker's diagnosis (diagnosis.h): the bounds on its lines, and how a Job keeps it
// (the first kDiagnosedFailures of a round and the root cause; nothing of it in StopWorkers,
// no stack head in JobFinished; the last failed round's failures in the view).
#include "rendezvous/membership/diagnosis.h"

#include "tests/catch.h"
#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

Failure diagnosed(std::uint32_t rank, std::int64_t unix_us) {
  Failure f = failure(rank, 3, unix_us);
  f.diagnosis.last_lines = {"rank " + std::to_string(rank) + " says goodbye"};
  f.diagnosis.stack_head = {"stack of rank " + std::to_string(rank)};
  return f;
}

TEST_CASE("a long line is cut at a character boundary and marked", "[diagnosis]") {
  CHECK(bounded_line("short") == "short");
  const std::string exact(kDiagnosisLineBytes, 'a');
  CHECK(bounded_line(exact) == exact);
  const std::string cut = bounded_line(exact + "b");
  CHECK(cut.size() == kDiagnosisLineBytes);
  CHECK(cut == std::string(kDiagnosisLineBytes - 3, 'a') + "...");
  // "é" (2 bytes) straddling the cut is dropped whole, never halved.
  const std::string accents =
      std::string(kDiagnosisLineBytes - 4, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9";
  CHECK(bounded_line(accents) == std::string(kDiagnosisLineBytes - 4, 'a') + "...");
}

TEST_CASE("a tail keeps the last 40 lines and at most 4 KiB of them", "[diagnosis]") {
  LineTail tail;
  CHECK(tail.lines().empty());
  for (int i = 0; i < 100; ++i) tail.add("line " + std::to_string(i));
  auto lines = tail.lines();
  REQUIRE(lines.size() == kDiagnosisLines);
  CHECK(lines.front() == "line 60");
  CHECK(lines.back() == "line 99");
  for (int i = 0; i < 30; ++i) tail.add(std::string(1000, 'x'));  // each cut to 240 bytes
  lines = tail.lines();
  CHECK(lines.size() == kDiagnosisBytes / kDiagnosisLineBytes);
  for (const auto& l : lines) CHECK(l.size() == kDiagnosisLineBytes);
  tail.clear();
  CHECK(tail.lines().empty());
}

TEST_CASE("a head keeps the first 40 lines and at most 4 KiB of them", "[diagnosis]") {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "frame " + std::to_string(i) + "\n";
  auto lines = head_lines(text);
  REQUIRE(lines.size() == kDiagnosisLines);
  CHECK(lines.front() == "frame 0");
  CHECK(lines.back() == "frame 39");
  CHECK(head_lines("one\n\nthree") == std::vector<std::string>{"one", "", "three"});
  lines = head_lines(std::string(30'000, 'y'));  // one long line: cut once
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].size() == kDiagnosisLineBytes);
  std::string wide;
  for (int i = 0; i < 30; ++i) wide += std::string(300, 'z') + "\n";
  CHECK(head_lines(wide).size() == kDiagnosisBytes / kDiagnosisLineBytes);
}

TEST_CASE("a job keeps diagnoses of a round's first failures and its root cause", "[diagnosis]") {
  Harness h;
  h.config.max_nodes = 2;
  h.config.max_restarts = 0;
  h.join(1, 32);
  h.join(2, 1);
  REQUIRE(h.job().state() == Job::State::kRunning);
  // Node 1 reports 20 failures, times 100..119 s: the first 16 keep their diagnosis.
  std::vector<Failure> many;
  for (std::uint32_t r = 0; r < 20; ++r) many.push_back(diagnosed(r, (100 + r) * 1'000'000));
  const Events stop = h.send(1, ReportFailure{1, many});
  const StopWorkers told = only_for<StopWorkers>(stop, 2);
  REQUIRE(told.first_failure);
  CHECK(told.first_failure->rank == 0);
  CHECK(told.first_failure->diagnosis.empty());  // the push to every node stays small
  JobView v = h.job().view();
  CHECK(v.failed_worker_count == 20);
  REQUIRE(v.failed_workers.size() == kDiagnosedFailures);
  CHECK(v.failed_workers[15].diagnosis.last_lines ==
        std::vector<std::string>{"rank 15 says goodbye"});
  REQUIRE(v.last_stop->failure);
  CHECK(v.last_stop->failure->diagnosis.last_lines.size() == 1);
  // Node 2's worker failed earliest: the root cause, kept though it came 21st.
  const Events end = h.send(2, ReportFailure{1, {diagnosed(32, 1'000'000)}});
  const JobFinished finished = only_for<JobFinished>(end, 1);
  REQUIRE(finished.root_cause);
  CHECK(finished.root_cause->rank == 32);
  CHECK(finished.root_cause->node_key == "host-2");
  CHECK(finished.root_cause->diagnosis.last_lines ==
        std::vector<std::string>{"rank 32 says goodbye"});
  CHECK(finished.root_cause->diagnosis.stack_head.empty());  // stays with the daemon
  v = h.job().view();
  CHECK(v.failed_worker_count == 21);
  REQUIRE(v.failed_workers.size() == kDiagnosedFailures + 1);
  CHECK(v.failed_workers.back().rank == 32);
  CHECK(v.failed_workers.back().diagnosis.stack_head ==
        std::vector<std::string>{"stack of rank 32"});
  REQUIRE(v.root_cause);
  CHECK(v.root_cause->diagnosis.stack_head == std::vector<std::string>{"stack of rank 32"});
}

TEST_CASE("a late root cause keeps its diagnosis until an earlier one arrives", "[diagnosis]") {
  Harness h;
  h.config.max_nodes = 2;
  h.join(1, 32);
  h.join(2, 1);
  std::vector<Failure> many;
  for (std::uint32_t r = 0; r < 18; ++r) many.push_back(diagnosed(r, (100 - r) * 1'000'000));
  h.send(1, ReportFailure{1, many});  // each one earlier than the one before
  h.send(2, WorkersStopped{1});
  // The restart round has begun: the view shows the last failed round's failures, the first
  // 16 and the root (rank 17); rank 16, the root before it, is not kept.
  REQUIRE(h.job().round() == 2);
  const JobView v = h.job().view();
  CHECK(v.failed_worker_count == 18);
  REQUIRE(v.failed_workers.size() == kDiagnosedFailures + 1);
  CHECK(v.failed_workers.back().rank == 17);
  CHECK_FALSE(v.failed_workers.back().diagnosis.empty());
  for (std::size_t i = 0; i < kDiagnosedFailures; ++i) {
    CHECK(v.failed_workers[i].rank == i);
    CHECK_FALSE(v.failed_workers[i].diagnosis.empty());
  }
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
