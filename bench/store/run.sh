#!/usr/bin/env bash
# Store benchmark: PyTorch's own TCPStore server (c10d::TCPStore, isServer=true) against
# ddp-rendezvous, in one run, both driven by the same c10d::TCPStore client load (store_load),
# then by the same raw-protocol barrier from one thread (wire_load: the clients' own cost out of
# the way). Prints markdown tables with ratios (ddp-rendezvous / PyTorch).
#
#   bench/store/run.sh [BUILD_DIR]          (default: <repo>/build; configured if missing)
#   PEERS="2.14 2.6 1.13" OPS_SECONDS=3 BARRIER_SIZES="1000 2000 4000 5000 10000" \
#     WIRE_SIZES="1000 4000 10000" REPEATS=3 RUN_TIMEOUT=300 CLIENTS_PER_PROCESS=1000 \
#     bench/store/run.sh
#
# PEERS: the PyTorch versions whose server runs beside ddp-rendezvous, one after the other.
#   1.13: the host's LibTorch (server and store_load clients built with the project).
#   2.6: Debian 13's LibTorch in the root scripts/debian_root.sh makes (run it from this
#     checkout once); bench/store/build_torch2.sh builds the server and store_load there, into
#     BUILD_DIR/torch2. That build has no libuv: its server is c10d's non-libuv TCPStoreBackend.
#     Its clients are 2.6's: 1.13 clients cannot talk to a 2.x server (2.x numbers VALIDATE 0,
#     1.13's SET), and wire_load speaks 1.13's numbering, so the wire cells run with 1.13 only.
#   2.14: as 2.6, with Debian sid's LibTorch in the root `scripts/debian_root.sh sid` makes
#     ($DDP_TORCH214_ROOT), built into BUILD_DIR/torch214; also without libuv.
#
# Every measurement gets a fresh server on port 0; PyTorch and ddp-rendezvous runs alternate and
# each cell is the median of REPEATS runs. Barrier sizes above what the file-descriptor
# limit allows are capped to the largest that fits, and the reason is printed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build}
PEERS=${PEERS-"2.14 2.6 1.13"}
# PyTorch 2.x peers: the Debian root each runs in and the folder of BUILD its programs go to.
declare -A TORCH_ROOT=([2.6]=${DDP_TORCH2_ROOT:-/var/lib/ddprun/trixie}
                       [2.14]=${DDP_TORCH214_ROOT:-/var/lib/ddprun/sid})
declare -A TORCH_BUILD=([2.6]=torch2 [2.14]=torch214)
OPS_SECONDS=${OPS_SECONDS:-3}
OPS_CLIENTS=${OPS_CLIENTS-"1 8 64"}   # an empty list skips these cells (the same below)
BARRIER_SIZES=${BARRIER_SIZES-"1000 2000 4000 5000 10000"}
WIRE_SIZES=${WIRE_SIZES-"1000 2000 4000 10000"}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
REPEATS=${REPEATS:-3}    # each cell is the median of this many runs (the machine is shared)
# The barrier's clients are spread over processes of this many clients; each process connects
# its clients one after another, so this also sets how many connect at once (4 streams for
# 4000 clients). 20 streams (500) at 10,000 clients outrun the server's accepts on 2 cores and
# overflow the 4096-connection listen backlog (1 s SYN retransmits) for either server.
CLIENTS_PER_PROCESS=${CLIENTS_PER_PROCESS:-1000}
HOST=127.0.0.1
# Clients spread over ten loopback addresses of the one server, each with its own ephemeral
# port space: ~20,000 connections to a single address exhaust Linux's preferred (even)
# ephemeral ports and every further connect() then searches the range, a cost of the clients'
# kernel side, not of the server (10,000 real clients come from many hosts). Both servers
# therefore listen on every interface (PyTorch's server always does).
CLIENT_HOSTS=$(seq -s, -f "127.0.0.%g" 1 10)

# --- build --------------------------------------------------------------------------------
if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
PROGRAMS="ddp-rendezvous torch_store_server store_load wire_load"
# shellcheck disable=SC2086
cmake --build "$BUILD" --parallel 2 --target $PROGRAMS >/dev/null \
  || { echo "run.sh: build failed; run: cmake --build $BUILD --target $PROGRAMS" >&2; exit 1; }
BIN=$BUILD/bin
for b in $PROGRAMS; do
  [[ -x $BIN/$b ]] || { echo "run.sh: $BIN/$b missing (is libtorch-dev installed?)" >&2; exit 1; }
done
declare -A TORCH_BIN=([1.13]=$BIN)   # PEER -> folder of its torch_store_server and store_load
for PEER in $PEERS; do
  [[ $PEER == 1.13 ]] && continue
  [[ -v TORCH_ROOT[$PEER] ]] \
    || { echo "run.sh: PEERS: $PEER is not one of 1.13 ${!TORCH_ROOT[*]}" >&2; exit 2; }
  "$ROOT/bench/store/build_torch2.sh" "$BUILD/${TORCH_BUILD[$PEER]}" "${TORCH_ROOT[$PEER]}" \
    || { echo "run.sh: building the $PEER programs in ${TORCH_ROOT[$PEER]} failed" >&2; exit 1; }
  TORCH_BIN[$PEER]=$(cd "$BUILD/${TORCH_BUILD[$PEER]}" && pwd -P)   # same path in the root
done

# --- limits -------------------------------------------------------------------------------
# A 1.13 client holds two server connections (main + watch callback), so a server with N
# clients needs 2N descriptors, and so does the load generator (it splits the clients over
# child processes). Try to raise the hard limit (needs CAP_SYS_RESOURCE), then use all of it.
ulimit -Hn 65536 2>/dev/null || true
ulimit -n "$(ulimit -Hn)"
NOFILE=$(ulimit -n)
SERVER_RESERVED_FDS=20   # stdio, listener, epoll/eventfd, c10d's own client and pipes
MAX_CLIENTS=$(( (NOFILE - SERVER_RESERVED_FDS) / 2 / 10 * 10 ))
# Leave 1.13's default 8 MiB stacks to the servers; store_load sets 256 KiB for its threads.
LIMIT_NOTE=""

# --- servers ------------------------------------------------------------------------------
WORK=$(mktemp -d)
SERVER_PID=""
NETNS=""
IN_NS=()
cleanup() {
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || true
  fi
  rm -rf "$WORK"
  [[ -z $NETNS ]] || ip netns del "$NETNS"
}
trap cleanup EXIT

# --- network namespace --------------------------------------------------------------------
# Servers and clients run in a private network namespace (loopback only) whose
# net.core.somaxconn is raised to 65535: a host that serves 10,000 workers is set up that way,
# and at the default 4096 a few of 19,980 connections arriving together overflow the listen
# queue and wait a 1 s SYN retransmit. ddp-rendezvous asks for a 65535 backlog (the kernel caps
# it at somaxconn); PyTorch's 1.13 server asks for 2048 whatever the setting. Needs root (ip
# netns); BENCH_NETNS=0, or no root, runs in the current namespace and says so.
SOMAXCONN_NOTE="Network namespace: the current one (net.core.somaxconn $(cat /proc/sys/net/core/somaxconn))."
if [[ ${BENCH_NETNS:-1} != 0 ]] && ip netns add "ddp-store-bench-$$" 2>/dev/null; then
  NETNS=ddp-store-bench-$$
  IN_NS=(ip netns exec "$NETNS")
  "${IN_NS[@]}" ip link set lo up
  "${IN_NS[@]}" sysctl -qw net.core.somaxconn=65535
  SOMAXCONN_NOTE="Network namespace: a private one, loopback only, net.core.somaxconn 65535."
fi

# start_server torch|ddp: sets SERVER_PID and SERVER_PORT once "listening on HOST:PORT" shows.
# torch is PyTorch $PEER's server; chroot execs it (SERVER_PID is the server's).
start_server() {
  local fifo=$WORK/ready line
  rm -f "$fifo"; mkfifo "$fifo"
  case $1 in
    # ip netns exec execs the server: $! is the server's own PID.
    torch) "${IN_NS[@]}" $(torch_prefix) "$(torch_bin)/torch_store_server" "$HOST" >"$fifo" \
             2>>"$WORK/torch.log" & ;;
    ddp) "${IN_NS[@]}" "$BIN/ddp-rendezvous" --host 0.0.0.0 --port 0 --log-level warn \
           >"$fifo" 2>>"$WORK/ddp.log" & ;;
  esac
  SERVER_PID=$!
  exec {ready_fd}<"$fifo"
  if ! read -r -t 30 -u "$ready_fd" line; then
    echo "run.sh: $1 server not ready within 30 s" >&2; exit 1
  fi
  exec {ready_fd}<&-   # both servers print nothing else on stdout
  SERVER_PORT=${line##*:}
}

stop_server() {
  kill -TERM "$SERVER_PID"
  local rc=0; wait "$SERVER_PID" || rc=$?
  [[ $rc -eq 0 ]] || echo "run.sh: server exited $rc on SIGTERM" >&2
  SERVER_PID=""
}

# field NAME LINE: value of NAME=value in a store_load result line.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

# torch_prefix / torch_bin: how to run, and where are, PyTorch $PEER's programs.
torch_prefix() { [[ $PEER == 1.13 ]] || echo "chroot ${TORCH_ROOT[$PEER]}"; }
torch_bin() { echo "${TORCH_BIN[$PEER]}"; }

# measure torch|ddp PROGRAM ARGS...: PROGRAM is store_load (PyTorch $PEER's clients) or
# wire_load; one store_load or wire_load run on a fresh server; prints
# its result line or "failed: <reason>".
measure() {
  local kind=$1 program=$2; shift 2
  start_server "$kind"
  local out rc=0
  local run=("$BIN/$program")
  # shellcheck disable=SC2207
  [[ $program == wire_load ]] || run=($(torch_prefix) "$(torch_bin)/$program")
  out=$(timeout "$RUN_TIMEOUT" "${IN_NS[@]}" "${run[@]}" "$@" --host "$CLIENT_HOSTS" \
          --port "$SERVER_PORT" --server-pid "$SERVER_PID" 2>"$WORK/load.err") || rc=$?
  stop_server
  if [[ $rc -eq 124 ]]; then echo "failed: over ${RUN_TIMEOUT}s"
  elif [[ $rc -ne 0 ]]; then
    echo "failed: $( { grep -m1 "^$program" "$WORK/load.err" || tail -n1 "$WORK/load.err"; } \
                      | cut -c1-80)"
  else echo "$out"; fi
}

# median KEY LINES...: the line whose KEY value is the median of the successful lines, else
# the first failure message.
median() {
  local key=$1; shift
  local ok=() line
  for line in "$@"; do [[ $line == failed* ]] || ok+=("$line"); done
  if (( ${#ok[@]} == 0 )); then echo "$1"; return; fi
  printf '%s\n' "${ok[@]}" | awk -v k="$key" '{ for (i = 1; i <= NF; ++i) if ($i ~ "^" k "=") {
      split($i, kv, "="); print kv[2] "\t" $0 } }' | sort -g | cut -f2- \
    | sed -n "$(( (${#ok[@]} + 1) / 2 ))p"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-";
                                           else printf "%.2f", a / b }'; }

CORES=$(nproc)
echo "Store benchmark on $CORES cores, $(uname -r), RLIMIT_NOFILE $NOFILE," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "$SOMAXCONN_NOTE" >&2
declare -A R
declare -A RUNS
# cells KEY LABEL SIZES PROGRAM ARGS...: REPEATS alternating runs of PROGRAM ARGS --clients N for
# each N in SIZES, every run on a fresh server; the lines whose KEY is the median go to
# R[torch.LABEL.N] and R[ddp.LABEL.N], every run's line to RUNS[KIND.LABEL.N.ROUND].
cells() {
  local key=$1 label=$2 sizes=$3; shift 3
  local n r kind lines
  for n in $sizes; do
    for (( r = 1; r <= REPEATS; ++r )); do
      for kind in torch ddp; do
        echo "  $label, $n clients, $kind, run $r, load $(cut -d' ' -f1 /proc/loadavg) ..." >&2
        RUNS[$kind.$label.$n.$r]=$(measure "$kind" "$@" --clients "$n")
        echo "    ${RUNS[$kind.$label.$n.$r]}" >&2
      done
    done
    for kind in torch ddp; do
      lines=(); for (( r = 1; r <= REPEATS; ++r )); do lines+=("${RUNS[$kind.$label.$n.$r]}"); done
      R[$kind.$label.$n]=$(median "$key" "${lines[@]}")
    done
  done
}

SIZES=""
for n in $BARRIER_SIZES; do
  if (( n > MAX_CLIENTS )); then
    LIMIT_NOTE="Barrier of $n clients capped to $MAX_CLIENTS: RLIMIT_NOFILE is $NOFILE and the \
hard limit cannot be raised here (no CAP_SYS_RESOURCE), while a 1.13 client holds 2 server \
connections, so one server process can hold at most ($NOFILE - $SERVER_RESERVED_FDS)/2 clients."
    n=$MAX_CLIENTS
  fi
  SIZES="$SIZES $n"
done
WIRE=""
for n in $WIRE_SIZES; do   # one descriptor per client on each side
  (( n <= NOFILE - 40 )) || n=$(( NOFILE - 40 ))
  WIRE="$WIRE $n"
done
for PEER in $PEERS; do
  cells ops_per_s "ops$PEER" "$OPS_CLIENTS" store_load ops --seconds "$OPS_SECONDS"
  cells total_s "c10d$PEER" "$SIZES" store_load barrier \
    --clients-per-process "$CLIENTS_PER_PROCESS"
  [[ $PEER != 1.13 ]] || cells total_s wire "$WIRE" wire_load
done

# --- table --------------------------------------------------------------------------------
echo
echo "Median of $REPEATS runs each; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
ops_table() {
echo
echo "| LibTorch $PEER clients | PyTorch $PEER server ops/s | ddp-rendezvous ops/s | ratio ddp/PyTorch | server CPU µs/op PyTorch / ddp |"
echo "|---|---|---|---|---|"
for n in $OPS_CLIENTS; do
  tl=${R[torch.ops$PEER.$n]}; dl=${R[ddp.ops$PEER.$n]}
  t=$(field ops_per_s "$tl"); d=$(field ops_per_s "$dl")
  cpu="$(field server_cpu_us_per_op "$tl") / $(field server_cpu_us_per_op "$dl")"
  echo "| set/get/add, $n clients | ${t:-$tl} | ${d:-$dl} | $(ratio "$d" "$t") | $cpu |"
done
}
# per_round LABEL N DENOMINATOR [ARGS...]: "min-max" over the rounds (each runs the two servers
# back to back) of PyTorch's total_s over `DENOMINATOR DDP_LINE ARGS...` of the ddp-rendezvous
# run beside it, skipping rounds where either gives nothing; "-" when none is left.
per_round() {
  local label=$1 n=$2 denominator=$3; shift 3
  local r t d list=""
  for (( r = 1; r <= REPEATS; ++r )); do
    t=$(field total_s "${RUNS[torch.$label.$n.$r]}")
    d=$("$denominator" "${RUNS[ddp.$label.$n.$r]}" "$@")
    if [[ -n $t && -n $d ]]; then list="$list $(ratio "$t" "$d")"; fi
  done
  awk -v l="$list" 'BEGIN { n = split(l, v, " "); if (n == 0) { print "-"; exit }
    lo = hi = v[1]; for (i = 2; i <= n; ++i) { if (v[i] < lo) lo = v[i]; if (v[i] > hi) hi = v[i] }
    printf "%.1f-%.1fx", lo, hi }'
}
# Denominators for per_round. total_of LINE: the run's total_s (per_round gives the speedup).
# clients_floor LINE CLIENT_CORES: the clients' own CPU seconds spread over the CLIENT_CORES
# cores the load generator can use, the shortest round any server could give them (they spend
# about the same whichever server they talk to); per_round gives the ceiling, the speedup a
# server costing no CPU at all could reach against that round's PyTorch server.
total_of() { field total_s "$1"; }
clients_floor() {
  awk -v a="$(field client_cpu_connect_s "$1")" -v b="$(field client_cpu_barrier_s "$1")" \
      -v n="$2" 'BEGIN { if (a != "" && b != "") printf "%.4f", (a + b) / n }'
}
# cpu_cell LINE: "S + C" CPU seconds of the server and of the load generator over both phases.
cpu_cell() {
  awk -v a="$(field server_cpu_connect_s "$1")" -v b="$(field server_cpu_barrier_s "$1")" \
      -v c="$(field client_cpu_connect_s "$1")" -v d="$(field client_cpu_barrier_s "$1")" \
    'BEGIN { if (a == "") print "-"; else printf "%.2f + %.2f", a + b, c + d }'
}
# barrier_table LABEL SIZES CONNECTIONS_PER_CLIENT CLIENT_CORES TITLE
barrier_table() {
  local label=$1 sizes=$2 per_client=$3 client_cores=$4 title=$5
  local n tl dl t d tcell dcell per rss cpu speedup
  echo
  echo "$title"
  echo
  echo "| barrier clients (connections) | PyTorch $PEER total s (connect + barrier) | ddp-rendezvous total s (connect + barrier) | ratio ddp/PyTorch | speedup | speedup per round (min-max) | ceiling per round: a free server (min-max) | ddp µs per client | server RSS MB PyTorch / ddp (ddp VmHWM) | CPU s server + clients, PyTorch / ddp |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for n in $sizes; do
    tl=${R[torch.$label.$n]}; dl=${R[ddp.$label.$n]}
    t=$(field total_s "$tl"); d=$(field total_s "$dl")
    if [[ -n $t ]]; then tcell="$t ($(field connect_s "$tl") + $(field barrier_s "$tl"))"; else tcell=$tl; fi
    if [[ -n $d ]]; then dcell="$d ($(field connect_s "$dl") + $(field barrier_s "$dl"))"; else dcell=$dl; fi
    per=$(awk -v d="$d" -v n="$n" 'BEGIN { if (d == "") print "-"; else printf "%.0f", d / n * 1e6 }')
    rss=$(awk -v t="$(field rss_kb "$tl")" -v r="$(field rss_kb "$dl")" -v h="$(field hwm_kb "$dl")" \
            'BEGIN { printf "%s / %s", (t == "" ? "-" : sprintf("%.1f", t / 1024)),
                     (r == "" ? "-" : sprintf("%.1f (%.1f)", r / 1024, h / 1024)) }')
    cpu="$(cpu_cell "$tl") / $(cpu_cell "$dl")"
    speedup=$(ratio "$t" "$d"); [[ $speedup == - ]] || speedup="${speedup}x"
    echo "| $n ($((per_client * n))) | $tcell | $dcell | $(ratio "$d" "$t") | $speedup | $(per_round "$label" "$n" total_of) | $(per_round "$label" "$n" clients_floor "$client_cores") | $per | $rss | $cpu |"
  done
}
for PEER in $PEERS; do
  ops_table
  # 1.13 clients hold 2 connections (main and watch), 2.x clients 1.
  barrier_table "c10d$PEER" "$SIZES" "$([[ $PEER == 1.13 ]] && echo 2 || echo 1)" "$CORES" \
    "Barrier, LibTorch $PEER c10d::TCPStore clients (store_load) against PyTorch $PEER's server:"
  [[ $PEER != 1.13 ]] || barrier_table wire "$WIRE" 1 1 \
    "Barrier, raw 1.13-protocol clients on one thread, one connection each (wire_load):"
done
[[ -z $LIMIT_NOTE ]] || { echo; echo "$LIMIT_NOTE"; }
echo; echo "$SOMAXCONN_NOTE"
