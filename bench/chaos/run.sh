#!/bin/sh
# The large fault campaign (docs/chaos.md): 264 seeded trials (24 per fault kind), the three
# rendezvous placements (embedded, standalone, etcd), loopback and network-namespace nodes. Writes its table to bench/results/chaos.txt
# (the latest run only) and prints it.
# usage: bench/chaos/run.sh [BUILD_DIR] [--trials N] [--seed S]   (BUILD_DIR defaults to build/)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-"$here/../../build"}
[ $# -gt 0 ] && shift
for bin in ddprun ddp-rendezvous; do
  if [ ! -x "$build/bin/$bin" ]; then
    echo "run.sh: $build/bin/$bin not found; build it first (cmake --build $build)" >&2
    exit 2
  fi
done
exec /usr/bin/python3 "$here/../../tests/chaos/chaos.py" --ddprun "$build/bin/ddprun" \
  --daemon "$build/bin/ddp-rendezvous" --trials 264 --placements embedded,standalone,etcd \
  --report "$here/../results/chaos.txt" "$@"
