// The status page served at "/": one self-contained HTML document (no framework, no external
// asset). Its script fetches /api/jobs every 2 s and draws a table of jobs and, per job, a
// collapsible table of its nodes (closed by default past 64 nodes, so 1000 nodes stay readable),
// keeping each job's open/closed choice across refreshes.
#pragma once

#include <string_view>

namespace ddp::rendezvous::status {

std::string_view status_page_html();

}  // namespace ddp::rendezvous::status
