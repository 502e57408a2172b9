// The status endpoint's pure parts: /metrics text, /api/jobs JSON, the router, /proc parsers.
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "rendezvous/status/jobs_json.h"
#include "rendezvous/status/metrics_text.h"
#include "rendezvous/status/page.h"
#include "rendezvous/status/process_stats.h"
#include "rendezvous/status/router.h"
#include "tests/catch.h"
#include "tests/rendezvous/status/fake_status_source.h"

using namespace ddp::rendezvous::status;
using namespace ddp::rendezvous::status::test;
using nlohmann::json;

namespace {

struct Sample {
  std::string name;
  std::string labels;
  double value = 0;
};

// A strict reader of the Prometheus text format: every line is a HELP, a TYPE or a sample; a
// sample belongs to the family its last TYPE declared (histograms: _bucket, _sum, _count).
std::vector<Sample> parse_prometheus(const std::string& text) {
  static const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+)");
  static const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram))");
  static const std::regex sample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\\n])*")(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\\n])*")*\})? (-?[0-9][0-9.e+-]*))");
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  std::string family;
  std::set<std::string> helped;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, help)) {
      helped.insert(m[1]);
    } else if (std::regex_match(line, m, type)) {
      family = m[1];
      REQUIRE(helped.count(family) == 1);
    } else {
      INFO(line);
      REQUIRE(std::regex_match(line, m, sample));
      const std::string name = m[1];
      REQUIRE((name == family || name == family + "_bucket" || name == family + "_sum" ||
               name == family + "_count"));
      out.push_back({name, m[2], std::stod(m[7])});
    }
  }
  return out;
}

double value_of(const std::vector<Sample>& samples, const std::string& name,
                const std::string& labels = "") {
  for (const Sample& s : samples) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  FAIL("no sample " << name << labels);
  return 0;
}

}  // namespace

TEST_CASE("metrics text parses and carries the source's values", "[status]") {
  FakeStatusSource source;
  const std::string text = format_metrics(source.metrics());
  const auto samples = parse_prometheus(text);
  CHECK(value_of(samples, "ddp_rdzv_jobs", "{state=\"running\"}") == 1);
  CHECK(value_of(samples, "ddp_rdzv_jobs", "{state=\"finished\"}") == 1);
  CHECK(value_of(samples, "ddp_rdzv_jobs_created_total") == 2);
  CHECK(value_of(samples, "ddp_rdzv_job_nodes", "{run_id=\"job-a\"}") == 2);
  CHECK(value_of(samples, "ddp_rdzv_job_workers", "{run_id=\"job-a\"}") == 4);
  CHECK(value_of(samples, "ddp_rdzv_job_restarts", "{run_id=\"job-a\"}") == 1);
  CHECK(value_of(samples, "ddp_rdzv_job_max_restarts", "{run_id=\"job-a\"}") == 3);
  // A run id with a quote and a backslash is escaped, and still one label.
  CHECK(value_of(samples, "ddp_rdzv_job_nodes", "{run_id=\"job \\\"b\\\"\\\\x\"}") == 0);
  CHECK(value_of(samples, "ddp_rdzv_rounds_total") == 3);
  CHECK(value_of(samples, "ddp_rdzv_restarts_total") == 1);
  CHECK(value_of(samples, "ddp_rdzv_failures_total", "{cause=\"worker_failed\"}") == 2);
  CHECK(value_of(samples, "ddp_rdzv_failures_total", "{cause=\"heartbeat_missed\"}") == 0);
  CHECK(value_of(samples, "ddp_rdzv_connections") == 5);
  CHECK(value_of(samples, "ddp_rdzv_store_keys") == 7);
  CHECK(value_of(samples, "ddp_rdzv_store_bytes") == 1234);
  CHECK(value_of(samples, "ddp_rdzv_store_ops_total", "{op=\"SET\"}") == 11);
  CHECK(value_of(samples, "ddp_rdzv_store_ops_total", "{op=\"GET\"}") == 13);
  CHECK(value_of(samples, "process_resident_memory_bytes") == 5 << 20);
  CHECK(value_of(samples, "process_cpu_seconds_total") == 1.25);
  CHECK(value_of(samples, "ddp_rdzv_status_requests_total") == 9);
}

TEST_CASE("metrics: a job's stragglers, median step time and flagged ranks' step times",
          "[status]") {
  MetricsInput in;
  m::JobView j;
  j.run_id = "job-s";
  j.steps.stragglers = 2;
  j.steps.median_step_time = std::chrono::microseconds(150'000);
  j.steps.straggler_ranks = {{2, std::chrono::microseconds(400'000)},
                             {7, std::chrono::microseconds(450'000)}};
  in.jobs.push_back(j);
  const auto samples = parse_prometheus(format_metrics(in));
  CHECK(value_of(samples, "ddp_rdzv_job_stragglers", "{run_id=\"job-s\"}") == 2);
  CHECK(value_of(samples, "ddp_rdzv_job_median_step_seconds", "{run_id=\"job-s\"}") == 0.15);
  CHECK(value_of(samples, "ddp_rdzv_rank_step_seconds", "{run_id=\"job-s\",rank=\"7\"}") == 0.45);
  CHECK(value_of(samples, "ddp_rdzv_rank_step_seconds", "{run_id=\"job-s\",rank=\"2\"}") == 0.4);
  std::size_t rank_series = 0;
  for (const Sample& s : samples) rank_series += s.name == "ddp_rdzv_rank_step_seconds" ? 1 : 0;
  CHECK(rank_series == 2);  // only the flagged ranks
}

TEST_CASE("round latency histogram buckets are cumulative and end at the count", "[status]") {
  FakeStatusSource source;
  const auto samples = parse_prometheus(format_metrics(source.metrics()));
  double previous = 0;
  int buckets = 0;
  for (const Sample& s : samples) {
    if (s.name != "ddp_rdzv_round_latency_seconds_bucket") continue;
    CHECK(s.value >= previous);
    previous = s.value;
    ++buckets;
  }
  CHECK(buckets == 13);
  CHECK(value_of(samples, "ddp_rdzv_round_latency_seconds_bucket", "{le=\"0.005\"}") == 1);
  CHECK(value_of(samples, "ddp_rdzv_round_latency_seconds_bucket", "{le=\"0.25\"}") == 2);
  CHECK(value_of(samples, "ddp_rdzv_round_latency_seconds_bucket", "{le=\"60\"}") == 2);
  CHECK(value_of(samples, "ddp_rdzv_round_latency_seconds_bucket", "{le=\"+Inf\"}") == 3);
  CHECK(value_of(samples, "ddp_rdzv_round_latency_seconds_count") == 3);
  CHECK(value_of(samples, "ddp_rdzv_round_latency_seconds_sum") == Approx(100.253));
}

TEST_CASE("jobs JSON field by field", "[status]") {
  FakeStatusSource source;
  const json doc = json::parse(format_jobs_json(source.jobs(), source.clocks()));
  CHECK(doc["generated_at"] == "2026-01-02T03:04:05.678Z");
  REQUIRE(doc["jobs"].size() == 2);
  const json& a = doc["jobs"][0];
  CHECK(a["run_id"] == "job-a");
  CHECK(a["state"] == "running");
  CHECK(a["round"] == 2);
  CHECK(a["restart_count"] == 1);
  CHECK(a["max_restarts"] == 3);
  CHECK(a["min_nodes"] == 2);
  CHECK(a["max_nodes"] == 2);
  CHECK(a["node_count"] == 2);
  CHECK(a["world_size"] == 4);
  CHECK(a["rounds_completed"] == 2);
  CHECK(a["restarts"] == 1);
  CHECK(a["last_round_latency_ms"] == 250);
  CHECK(a["failures"]["worker_failed"] == 1);
  CHECK(a["failures"]["node_left"] == 0);
  CHECK(a["created_at"] == "2026-01-02T03:03:05.678Z");
  CHECK(a["round_completed_at"] == "2026-01-02T03:04:00.678Z");
  CHECK(a["finished_at"].is_null());
  CHECK(a["exit_code"].is_null());
  CHECK(a["root_cause"].is_null());
  CHECK(a["last_failure"]["reason"] == "worker_failed");
  CHECK(a["last_failure"]["detail"] == "worker rank 2 failed");
  CHECK(a["last_failure"]["at"] == "2026-01-02T03:03:59.678Z");
  const json& f = a["last_failure"]["failure"];
  CHECK(f["node_key"] == "host-b:7");
  CHECK(f["group_rank"] == 1);
  CHECK(f["rank"] == 2);
  CHECK(f["exit_code"] == 3);
  CHECK(f["exit"] == "exit code 3");
  CHECK(f["pid"] == 4242);
  CHECK(f["time"] == "2026-01-02T03:03:20.000Z");
  CHECK(f["message"] == "RuntimeError: boom\nTraceback");
  CHECK(f["last_lines"] == json::array({"step 7", "RuntimeError: boom"}));
  CHECK(f["stack_head"] == json::array({"Current thread"}));
  CHECK_FALSE(a.contains("failed_workers"));  // only in the job's own answer
  REQUIRE(a["nodes"].size() == 2);
  const json& n1 = a["nodes"][1];
  CHECK(n1["node_key"] == "host-b:7");
  CHECK(n1["addr"] == "10.0.0.2");
  CHECK(n1["store_port"] == 29501);
  CHECK(n1["local_world_size"] == 2);
  CHECK(n1["role"] == "participant");
  CHECK(n1["group_rank"] == 1);
  CHECK(n1["first_rank"] == 2);
  CHECK(n1["last_rank"] == 3);
  const json& b = doc["jobs"][1];
  CHECK(b["run_id"] == "job \"b\"\\x");
  CHECK(b["state"] == "finished");
  CHECK(b["exit_code"] == 3);
  CHECK(b["finish_reason"] == "failed: worker rank 2 failed");
  CHECK(b["root_cause"]["rank"] == 2);
  CHECK(b["finished_at"] == "2026-01-02T03:02:25.678Z");
  CHECK(b["last_failure"].is_null());
  CHECK(b["nodes"].empty());
}

TEST_CASE("one job's JSON adds its failed workers with their last lines", "[status]") {
  FakeStatusSource source;
  const json doc = json::parse(format_job_json(finished_job(), source.clocks()));
  const json& b = doc["job"];
  CHECK(b["failed_worker_count"] == 5);
  REQUIRE(b["failed_workers"].size() == 2);
  CHECK(b["failed_workers"][1]["rank"] == 3);
  CHECK(b["failed_workers"][0]["last_lines"] == json::array({"step 7", "RuntimeError: boom"}));
  CHECK(b["failed_workers"][0]["stack_head"] == json::array({"Current thread"}));
  CHECK(b["root_cause"]["last_lines"].size() == 2);
  m::JobView bad = finished_job();  // worker output is bytes: invalid UTF-8 is replaced
  bad.failed_workers[0].diagnosis.last_lines = {"\xff\xfe ok"};
  const json replaced = json::parse(format_job_json(bad, source.clocks()));
  CHECK(replaced["job"]["failed_workers"][0]["last_lines"][0] == "\xEF\xBF\xBD\xEF\xBF\xBD ok");
  CHECK(json::parse(format_job_json(running_job(), source.clocks()))["job"]["failed_workers"]
            .empty());
}

TEST_CASE("router serves the four routes and refuses the rest", "[status]") {
  FakeStatusSource source;
  Reply page = route("GET", "/", source);
  CHECK(page.status == 200);
  CHECK(page.content_type.rfind("text/html", 0) == 0);
  CHECK(page.body == status_page_html());
  CHECK(page.body.find("http://") == std::string::npos);  // no external asset
  CHECK(page.body.find("https://") == std::string::npos);

  Reply metrics = route("GET", "/metrics?x=1", source);
  CHECK(metrics.status == 200);
  CHECK(metrics.content_type.rfind("text/plain; version=0.0.4", 0) == 0);

  Reply jobs = route("GET", "/api/jobs", source);
  CHECK(jobs.status == 200);
  CHECK(json::parse(jobs.body)["jobs"].size() == 2);

  Reply one = route("GET", "/api/jobs/job-a", source);
  CHECK(one.status == 200);
  CHECK(json::parse(one.body)["job"]["run_id"] == "job-a");
  Reply escaped = route("GET", "/api/jobs/job%20%22b%22%5Cx", source);
  CHECK(escaped.status == 200);

  Reply unknown = route("GET", "/api/jobs/nope", source);
  CHECK(unknown.status == 404);
  CHECK(unknown.body == "404 not found: no job with run id 'nope'\n");
  CHECK(route("GET", "/api/jobs/%zz", source).status == 400);
  Reply missing = route("GET", "/etc/passwd", source);
  CHECK(missing.status == 404);
  CHECK(missing.body.find('\n') == missing.body.size() - 1);  // one short line

  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    Reply r = route(method, "/metrics", source);
    CHECK(r.status == 405);
    CHECK(r.method_not_allowed);
  }
  CHECK(route("HEAD", "/metrics", source).status == 200);
}

TEST_CASE("percent decoding", "[status]") {
  CHECK(percent_decode("a%2Fb") == "a/b");
  CHECK(percent_decode("a+b") == "a+b");
  CHECK(!percent_decode("a%2"));
  CHECK(!percent_decode("%"));
  CHECK(!percent_decode("%g0"));
}

TEST_CASE("proc/self parsers", "[status]") {
  // A command name with spaces and a ')' inside: fields are counted after the last ')'.
  const std::string stat =
      "1234 (ddp (x) y) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 1 0 100 1000 50";
  CHECK(parse_cpu_seconds(stat, 100) == Approx(4.0));
  CHECK(parse_cpu_seconds("garbage", 100) == 0);
  CHECK(parse_rss_bytes("1000 250 30 1 0 100 0\n", 4096) == 250 * 4096);
  CHECK(parse_rss_bytes("", 4096) == 0);
  CHECK(read_process_stats().rss_bytes > 0);
}
