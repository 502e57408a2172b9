#!/usr/bin/env bash
# Rendezvous benchmark: K simulated agents join one job on a real ddp-rendezvous daemon
# (bench/rendezvous/rdzv_bench.cc), then one agent reports a failure and every agent must
# receive StopWorkers (cross-node teardown), then JobFinished. Each K runs in both flows of
# rdzv_bench: pipelined (each simulated agent goes on by itself, as a real agent does: the
# rendezvous figure) and --phased (barriers between connect, handshake and join: the per-phase
# breakdown). Prints markdown tables with the median of REPEAT runs per K, flow and mode, and the
# secret / plain ratios (bench/rendezvous/table.py).
#
# usage: bench/rendezvous/run.sh [BUILD_DIR]   (default: build); env AGENTS="100 1000 4000",
#        REPEAT=3
set -euo pipefail
BUILD=${1:-build}
AGENTS=${AGENTS:-"100 1000 4000"}
REPEAT=${REPEAT:-3}
DAEMON=$BUILD/bin/ddp-rendezvous
BENCH=$BUILD/bin/rdzv_bench
for bin in "$DAEMON" "$BENCH"; do
  [[ -x $bin ]] || { echo "missing $bin; build the targets ddp-rendezvous and rdzv_bench" >&2; exit 1; }
done
ulimit -n "$(ulimit -Hn)"

# The daemon prints one "listening on HOST:PORT" line when ready; read it with a deadline.
coproc DAEMON_PROC { exec "$DAEMON" --port 0 --log-level warn; }
daemon_pid=$DAEMON_PROC_PID
trap 'kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null || true' EXIT
read -r -t 10 ready <&"${DAEMON_PROC[0]}" || { echo "daemon did not start" >&2; exit 1; }
port=${ready##*:}

# The daemon's CPU time in ns (every thread's on-CPU time from /proc/PID/task/*/schedstat;
# /proc/PID/stat counts 10 ms ticks, too coarse for one run): what one run cost the daemon.
# (%.0f, not %d: mawk clamps %d at 2^31, i.e. after the daemon's first 2.1 s of CPU.)
daemon_ns() { cat /proc/"$daemon_pid"/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}'; }

# Unauthenticated and authenticated (job secrets, --secret) runs alternate, side by side, in
# each flow; the flows alternate too.
results=()
for k in $AGENTS; do
  for ((i = 0; i < REPEAT; i++)); do
    for flow in pipelined phased; do
      for mode in plain auth; do
        args=()
        [[ $flow == phased ]] && args+=(--phased)
        [[ $mode == auth ]] && args+=(--secret "bench-secret-$k-$i-0123456789abcdef")
        before=$(daemon_ns)
        line=$("$BENCH" --port "$port" --agents "$k" --run-id "bench-$flow-$mode-$k-$i" "${args[@]}")
        after=$(daemon_ns)
        results+=("${line%\}},\"daemon_cpu_s\":$(awk -v t=$((after - before)) 'BEGIN{print t / 1e9}')}")
      done
    done
  done
done

printf '%s\n' "${results[@]}" | /usr/bin/python3 "$(dirname "$0")/table.py"
echo
echo "median of $REPEAT runs per K, flow and mode; daemon and all K clients share this machine ($(nproc) cores)."
echo "reference: torchrun c10d rendezvous, 4000 hosts: 10 s after PyTorch PR #124982 (373 s before)."
