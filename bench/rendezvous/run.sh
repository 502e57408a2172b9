#!/usr/bin/env bash
# Rendezvous benchmark: K simulated agents join one job on a real ddp-rendezvous daemon
# (bench/rendezvous/rdzv_bench.cc), then one agent reports a failure and every agent must
# receive StopWorkers (cross-node teardown), then JobFinished. Each K runs in both flows of
# rdzv_bench: pipelined (each simulated agent goes on by itself, as a real agent does: with a
# secret AUTH_OPEN and the signed JOIN in one write, the JOIN again when the daemon challenges;
# the rendezvous figure), pipelined --first-alone (agent 0 joins alone first, so the daemon knows
# the job's key when the others open) and --phased (barriers between connect, AUTH_HELLO -> CHALLENGE and
# join: the per-phase breakdown of the challenged way). Prints markdown tables with the median of
# REPEAT runs per K, flow and mode (and how many agents the daemon challenged), and the
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
# --open-window is given explicitly (its default, 10 s) because the wait below depends on it.
OPEN_WINDOW_S=10
coproc DAEMON_PROC { exec "$DAEMON" --port 0 --log-level warn --open-window "$OPEN_WINDOW_S"; }
daemon_pid=$DAEMON_PROC_PID
trap 'kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null || true' EXIT
read -r -t 10 ready <&"${DAEMON_PROC[0]}" || { echo "daemon did not start" >&2; exit 1; }
ready_s=$(date +%s.%N)  # the daemon took its start time before it printed "listening"
port=${ready##*:}

# The daemon's start rule (rendezvous/auth/open_guard.h): a standalone daemon challenges every
# AUTH_OPEN stamped less than --open-window after its start (an open recorded for an earlier
# daemon could otherwise be replayed to it). A real standalone daemon runs for days, so that
# first window is not what agents meet; this bench is not a test of it, so it simply waits until
# the daemon is older than its window (the remaining time from the "listening" line, which the
# daemon prints after taking its start time, plus 50 ms for the millisecond stamps) before the
# first measured run. The agents are then challenged only for what the window does not cover:
# a job whose key the daemon does not know yet (trust on first use: every secret run below is a
# new run id, so its agents' opens that arrive before its first JOIN registered the key are
# challenged), which rdzv_bench counts ("challenged").
sleep "$(awk -v r="$ready_s" -v now="$(date +%s.%N)" -v w="$OPEN_WINDOW_S" \
  'BEGIN { d = r + w + 0.05 - now; printf "%.3f", (d > 0 ? d : 0) }')"

# The daemon's CPU time in ns (every thread's on-CPU time from /proc/PID/task/*/schedstat;
# /proc/PID/stat counts 10 ms ticks, too coarse for one run): what one run cost the daemon.
# (%.0f, not %d: mawk clamps %d at 2^31, i.e. after the daemon's first 2.1 s of CPU.)
daemon_ns() { cat /proc/"$daemon_pid"/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}'; }

# Unauthenticated and authenticated (job secrets, --secret) runs alternate, side by side, in
# each flow; the flows alternate too.
results=()
for k in $AGENTS; do
  for ((i = 0; i < REPEAT; i++)); do
    for flow in pipelined split first_alone first_alone_prepared phased; do
      for mode in plain auth; do
        args=()
        [[ $flow == phased ]] && args+=(--phased)
        [[ $flow == first_alone* ]] && args+=(--first-alone)
        [[ $flow == *prepared ]] && args+=(--prepared)
        [[ $mode == auth ]] && args+=(--secret "bench-secret-$k-$i-0123456789abcdef")
        before=$(daemon_ns)
        if [[ $flow == split ]]; then
          # Agent 0 in a process of its own (a first agent on its own host) and the K-1 others
          # in this bench's usual one process, starting 0.3 ms after it: agent 0's open reaches
          # the daemon first and, with a secret, registers the job's key while the others'
          # opens arrive (they wait for it, parked). The line is the K-1 agents' process's.
          t0=$(awk -v n="$(date +%s.%N)" 'BEGIN { printf "%.3f", n * 1000 + 300 }')
          "$BENCH" --port "$port" --agents "$k" --run-id "bench-$flow-$mode-$k-$i" --range 0:1 \
            --start-at "$t0" "${args[@]}" > /dev/null &
          first=$!
          line=$("$BENCH" --port "$port" --agents "$k" --run-id "bench-$flow-$mode-$k-$i" \
            --range "1:$k" --start-at "$(awk -v t="$t0" 'BEGIN { printf "%.3f", t + 0.3 }')" \
            "${args[@]}")
          wait "$first"
        else
          line=$("$BENCH" --port "$port" --agents "$k" --run-id "bench-$flow-$mode-$k-$i" "${args[@]}")
        fi
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
