#include "rendezvous/status/router.h"

#include "rendezvous/status/jobs_json.h"
#include "rendezvous/status/metrics_text.h"
#include "rendezvous/status/page.h"

namespace ddp::rendezvous::status {
namespace {

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kText = "text/plain; charset=utf-8";
constexpr std::string_view kJobsPrefix = "/api/jobs/";

Reply text(int status, std::string body) {
  return {status, std::string(kText), std::move(body) + "\n", false};
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hex_value(text[i + 1]);
    const int lo = hex_value(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

Reply route(std::string_view method, std::string_view target, const StatusSource& source) {
  if (method != "GET" && method != "HEAD") {
    Reply r = text(405, "405 method not allowed: the status port is read-only (GET, HEAD)");
    r.method_not_allowed = true;
    return r;
  }
  std::string_view path = target.substr(0, target.find_first_of("?#"));
  if (path == "/" || path == "/index.html") {
    return {200, "text/html; charset=utf-8", std::string(status_page_html()), false};
  }
  if (path == "/metrics") {
    return {200, std::string(kMetricsContentType), format_metrics(source.metrics()), false};
  }
  if (path == "/api/jobs" || path == "/api/jobs/") {
    return {200, std::string(kJson), format_jobs_json(source.jobs(), source.clocks()), false};
  }
  if (path.substr(0, kJobsPrefix.size()) == kJobsPrefix) {
    std::optional<std::string> run_id = percent_decode(path.substr(kJobsPrefix.size()));
    if (!run_id) return text(400, "400 bad request: malformed percent escape in the run id");
    std::optional<membership::JobView> job = source.job(*run_id);
    if (!job) return text(404, "404 not found: no job with run id '" + *run_id + "'");
    return {200, std::string(kJson), format_job_json(*job, source.clocks()), false};
  }
  return text(404, "404 not found: try /, /metrics, /api/jobs or /api/jobs/<run id>");
}

}  // namespace ddp::rendezvous::status
