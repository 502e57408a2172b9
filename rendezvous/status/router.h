// The status port's routes, as a pure function from (method, target) to a reply: no socket,
// so every route, 404 and 405 is unit-tested with a fake StatusSource.
//   GET /               the HTML page (page.h)
//   GET /metrics        Prometheus text (metrics_text.h)
//   GET /api/jobs       every job as JSON (jobs_json.h)
//   GET /api/jobs/<id>  one job (the id percent-decoded); 404 when unknown
// HEAD is answered like GET without the body. Other methods: 405 with Allow: GET, HEAD.
// Unknown paths: 404. Error bodies are one short line of text.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "rendezvous/status/status_source.h"

namespace ddp::rendezvous::status {

struct Reply {
  int status = 200;
  std::string content_type;
  std::string body;
  bool method_not_allowed = false;  // send "Allow: GET, HEAD"
};

Reply route(std::string_view method, std::string_view target, const StatusSource& source);

// "%2F" -> "/", "+" kept; nullopt for a bad escape.
std::optional<std::string> percent_decode(std::string_view text);

}  // namespace ddp::rendezvous::status
