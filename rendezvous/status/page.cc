#include "rendezvous/status/page.h"

namespace ddp::rendezvous::status {
namespace {

constexpr std::string_view kPage = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ddp-rendezvous status</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
#meta { color: #666; margin-bottom: 1em; }
table { border-collapse: collapse; margin: .3em 0 1em; }
th, td { border-bottom: 1px solid #ddd; padding: .25em .7em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.state-running { color: #176f2c; font-weight: 600; }
.state-stopping, .state-pending { color: #9a6700; font-weight: 600; }
.state-finished { color: #555; font-weight: 600; }
.failure { color: #b3261e; max-width: 40em; white-space: pre-wrap; }
details { margin: 0 0 1em 1em; }
pre.lines { background: #f6f6f6; padding: .4em .6em; margin: .3em 0; overflow-x: auto; }
summary { cursor: pointer; }
#error { color: #b3261e; }
</style>
</head>
<body>
<h1>ddp-rendezvous</h1>
<div id="meta">loading...</div>
<div id="error"></div>
<table id="jobs">
<thead><tr><th>run id</th><th>state</th><th>round</th><th>restarts</th><th>nodes</th><th>workers</th><th>stragglers</th><th>last failure</th></tr></thead>
<tbody></tbody>
</table>
<div id="nodes"></div>
<script>
"use strict";
const openState = {};  // run id -> the user's open/closed choice for its node table
function esc(s) {
  return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g,
    c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
}
function failureText(job) {
  const f = job.root_cause || (job.last_failure && job.last_failure.failure);
  if (f) return "rank " + f.rank + " on " + f.node_key + ": " + f.exit +
    (f.message ? " - " + f.message.split("\n")[0] : "");
  if (job.last_failure) return job.last_failure.detail;
  return "";
}
// The failure's last lines of output and stack head (docs/diagnosis.md), if any.
function linesOf(j) {
  const f = j.root_cause || (j.last_failure && j.last_failure.failure);
  if (!f || (!f.last_lines.length && !f.stack_head.length)) return "";
  const key = "lines " + j.run_id;
  const pre = (title, lines) => lines.length ?
    "<div>" + title + '</div><pre class="lines">' + esc(lines.join("\n")) + "</pre>" : "";
  return '<details data-run-id="' + esc(key) + '"' + (openState[key] === false ? "" : " open") +
    "><summary>" + esc(j.run_id) + ": rank " + esc(f.rank) + " on " + esc(f.node_key) +
    "</summary>" + pre("last lines of output", f.last_lines) +
    pre("head of its stack file", f.stack_head) + "</details>";
}
function ranks(n) {
  if (n.first_rank === null) return "";
  return n.first_rank === n.last_rank ? String(n.first_rank) : n.first_rank + "-" + n.last_rank;
}
function stragglerText(j) {
  const ranks = j.straggler_ranks.map(r =>
    "rank " + r.rank + " " + r.step_seconds.toFixed(2) + "s");
  return j.stragglers ? j.stragglers + " (" + ranks.join(", ") + "; median " +
    j.median_step_seconds.toFixed(2) + "s)" : "";
}
function draw(data) {
  document.getElementById("meta").textContent =
    data.jobs.length + " job(s); updated " + data.generated_at;
  document.getElementById("error").textContent = "";
  const rows = data.jobs.map(j =>
    '<tr class="job" data-run-id="' + esc(j.run_id) + '"><td>' + esc(j.run_id) + "</td>" +
    '<td class="state-' + esc(j.state) + '">' + esc(j.state) +
    (j.exit_code !== null ? " (exit " + esc(j.exit_code) + ")" : "") + "</td>" +
    '<td class="num">' + esc(j.round) + '</td><td class="num">' + esc(j.restart_count) + "/" +
    esc(j.max_restarts) + '</td><td class="num">' + esc(j.node_count) + '</td><td class="num">' +
    esc(j.world_size) + '</td><td class="stragglers">' + esc(stragglerText(j)) +
    '</td><td class="failure">' + esc(failureText(j)) + "</td></tr>");
  document.querySelector("#jobs tbody").innerHTML =
    rows.join("") || '<tr><td colspan="8">no jobs</td></tr>';
  const tables = data.jobs.map(j => {
    const isOpen = j.run_id in openState ? openState[j.run_id] : j.nodes.length <= 64;
    const nodeRows = j.nodes.map(n =>
      '<tr class="node"><td>' + esc(n.node_key) + "</td><td>" + esc(n.addr) + '</td><td class="num">' +
      esc(n.group_rank === null ? "" : n.group_rank) + "</td><td>" + esc(ranks(n)) +
      '</td><td class="num">' + esc(n.local_world_size) + "</td><td>" + esc(n.role) +
      "</td></tr>").join("");
    return linesOf(j) + '<details data-run-id="' + esc(j.run_id) + '"' + (isOpen ? " open" : "") +
      "><summary>" + esc(j.run_id) + ": " + j.nodes.length + " node(s)</summary>" +
      "<table><thead><tr><th>node</th><th>address</th><th>group rank</th><th>ranks</th>" +
      "<th>workers</th><th>role</th></tr></thead><tbody>" + nodeRows + "</tbody></table></details>";
  });
  const box = document.getElementById("nodes");
  box.innerHTML = tables.join("");
  box.querySelectorAll("details").forEach(d =>
    d.addEventListener("toggle", () => { openState[d.dataset.runId] = d.open; }));
}
async function refresh() {
  try {
    const r = await fetch("/api/jobs", {cache: "no-store"});
    if (!r.ok) throw new Error("HTTP " + r.status);
    draw(await r.json());
  } catch (e) {
    document.getElementById("error").textContent = "cannot reach the daemon: " + e.message;
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view status_page_html() { return kPage; }

}  // namespace ddp::rendezvous::status
