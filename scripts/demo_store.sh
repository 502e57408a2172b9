#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), starts the ddp-rendezvous store daemon on a free
# port, drives it with a real, unmodified PyTorch client (torch.distributed.TCPStore from
# Debian's python3-torch, is_master=False), and stops the daemon.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
BIN=${BUILD_DIR:-build}/bin/ddp-rendezvous
PY=/usr/bin/python3   # Debian's interpreter: the one with torch

echo "== starting $BIN --port 0"
exec {daemon_out}< <(exec "$BIN" --port 0)
DAEMON_PID=$!
trap 'kill "$DAEMON_PID" 2>/dev/null || true' EXIT
read -r -t 10 -u "$daemon_out" ready || { echo "daemon did not become ready in 10 s" >&2; exit 1; }
echo "   daemon says: $ready"
PORT=${ready##*:}

echo "== driving it with torch.distributed.TCPStore (PyTorch $($PY -c 'import torch; print(torch.__version__)'))"
"$PY" - "$PORT" <<'PYEOF'
import sys, threading, datetime
import torch.distributed as dist
port = int(sys.argv[1])
store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=10))
store.set("greeting", "hello from PyTorch")
print("   set greeting          ->", store.get("greeting").decode())
print("   add counter 5, 2      ->", store.add("counter", 5), store.add("counter", 2))
print("   compare_set counter   ->", store.compare_set("counter", "7", "done").decode())
other = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=10))
threading.Timer(0.3, lambda: other.set("ready", "1")).start()  # a second client, a bit later
store.wait(["ready"])
print("   wait [ready]          -> woken by the other client's set")
try:
    store.wait(["never"], datetime.timedelta(milliseconds=500))
except RuntimeError as e:
    print("   wait [never] 0.5 s    -> timed out as expected:", e)
print("   num_keys              ->", store.num_keys())
PYEOF

echo "== stopping the daemon (SIGTERM)"
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID" && echo "   exited 0"
trap - EXIT
