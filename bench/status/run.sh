#!/usr/bin/env bash
# Status-port cost: a 4000-client TCPStore barrier (bench/store's wire_load: raw clients on one
# thread, connect then ADD/SET/WAIT) against ddp-rendezvous, side by side:
#   plain   the daemon without --status-port, nobody scraping;
#   1hz     the daemon with --status-port and a scraper GETting /metrics once a second (what a
#           Prometheus server does at its shortest usual interval);
#   10hz    the same at ten scrapes a second (a stress point, not a use).
# Runs alternate plain/1hz/10hz on a fresh daemon each; every cell is the median of REPEATS;
# ratios are against plain. Prints a markdown table.
#
#   bench/status/run.sh [BUILD_DIR]      CLIENTS=4000 REPEATS=7 bench/status/run.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build}
CLIENTS=${CLIENTS:-4000}
REPEATS=${REPEATS:-7}
HOST=127.0.0.1
cmake --build "$BUILD" --parallel 2 --target ddp-rendezvous wire_load >/dev/null \
  || { echo "run.sh: build failed; run: cmake --build $BUILD --target ddp-rendezvous wire_load" >&2; exit 1; }
BIN=$BUILD/bin
ulimit -n "$(ulimit -Hn)"
command -v curl >/dev/null || { echo "run.sh: needs curl (apt-get install curl)" >&2; exit 1; }

WORK=$(mktemp -d)
DAEMON_PID=""
SCRAPER_PID=""
cleanup() {
  [[ -z $SCRAPER_PID ]] || { kill "$SCRAPER_PID" 2>/dev/null || true; wait "$SCRAPER_PID" 2>/dev/null || true; }
  [[ -z $DAEMON_PID ]] || { kill -TERM "$DAEMON_PID" 2>/dev/null || true; wait "$DAEMON_PID" 2>/dev/null || true; }
  rm -rf "$WORK"
}
trap cleanup EXIT

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

# measure plain|1hz|10hz: one barrier on a fresh daemon; prints wire_load's result line.
measure() {
  local mode=$1 status_args=()
  rm -f "$WORK/port" "$WORK/sport"
  [[ $mode == plain ]] || status_args=(--status-port 0 --status-port-file "$WORK/sport")
  "$BIN/ddp-rendezvous" --host "$HOST" --port 0 --port-file "$WORK/port" --log-level warn \
    "${status_args[@]}" >/dev/null 2>>"$WORK/daemon.log" &
  DAEMON_PID=$!
  for _ in $(seq 300); do
    [[ -s $WORK/port && ( $mode == plain || -s $WORK/sport ) ]] && break
    sleep 0.01  # polling period of the daemon's port files
  done
  if [[ $mode != plain ]]; then
    local period=1; [[ $mode == 10hz ]] && period=0.1
    local url="http://$HOST:$(cat "$WORK/sport")/metrics"
    # Bounded: at most 3000 scrapes (5 min at 10 Hz); killed when the barrier is over.
    ( for _ in $(seq 3000); do curl -s -o /dev/null "$url"; sleep "$period"; done ) &
    SCRAPER_PID=$!
    sleep 0.2  # the point: the scraper is running before the clients connect
  fi
  local out
  out=$("$BIN/wire_load" --host "$HOST" --port "$(cat "$WORK/port")" --clients "$CLIENTS" \
          --server-pid "$DAEMON_PID" 2>>"$WORK/load.err")
  if [[ -n $SCRAPER_PID ]]; then kill "$SCRAPER_PID"; wait "$SCRAPER_PID" 2>/dev/null || true; SCRAPER_PID=""; fi
  kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" || true; DAEMON_PID=""
  echo "$out"
}

median() {  # median KEY LINES...
  local key=$1; shift
  for l in "$@"; do field "$key" "$l"; done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

declare -A runs
for ((r = 1; r <= REPEATS; ++r)); do
  for mode in plain 1hz 10hz; do
    line=$(measure "$mode")
    runs[$mode]+="$line"$'\n'
    echo "repeat $r $mode: $line" >&2
  done
done

echo "# status-port cost: $CLIENTS-client store barrier, median of $REPEATS ($(date -u +%F), $(nproc) cores)"
echo
echo "| daemon | connect s | barrier s | total s | total / plain | server CPU s (connect+barrier) |"
echo "|---|---|---|---|---|---|"
plain_total=""
for mode in plain 1hz 10hz; do
  mapfile -t lines <<<"${runs[$mode]%$'\n'}"
  c=$(median connect_s "${lines[@]}"); b=$(median barrier_s "${lines[@]}")
  t=$(median total_s "${lines[@]}")
  cpu=$(for l in "${lines[@]}"; do
          echo "$(field server_cpu_connect_s "$l") + $(field server_cpu_barrier_s "$l")" | bc -l
        done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  [[ -n $plain_total ]] || plain_total=$t
  ratio=$(printf '%.3f' "$(echo "$t / $plain_total" | bc -l)")
  cpu=$(printf '%.2f' "$cpu")
  label=$mode; [[ $mode == plain ]] && label="no status port"
  [[ $mode == 1hz ]] && label="status port, /metrics every 1 s"
  [[ $mode == 10hz ]] && label="status port, /metrics every 0.1 s"
  echo "| $label | $c | $b | $t | $ratio | $cpu |"
done
echo
echo "Spread (min..max of total s): $(for mode in plain 1hz 10hz; do
  mapfile -t lines <<<"${runs[$mode]%$'\n'}"
  printf '%s %s..%s; ' "$mode" \
    "$(for l in "${lines[@]}"; do field total_s "$l"; done | sort -g | head -1)" \
    "$(for l in "${lines[@]}"; do field total_s "$l"; done | sort -g | tail -1)"
done)"
