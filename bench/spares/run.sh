#!/bin/sh
# Spares benchmark (issue 32): node loss -> workers running again, with a spare and without one
# (MIN = MAX-1, then a new joiner), split into detect / stop / re-round / spawn; real agents on
# loopback at 2 and 8 nodes, simulated agents (rdzv_bench --loss) at 2, 8 and 1000. Not a CTest: a
# measurement (bench/spares/bench.py says how). Results: bench/results/spares_<date>.txt.
# usage: bench/spares/run.sh [BUILD_DIR] [--repeats N] [--nodes 2,8] [--sim-nodes 2,8,1000]
#                            [--sim-repeats M]   (BUILD_DIR defaults to build/)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-"$here/../../build"}
[ $# -gt 0 ] && shift
for bin in ddprun ddp-rendezvous rdzv_bench; do
  if [ ! -x "$build/bin/$bin" ]; then
    echo "run.sh: $build/bin/$bin not found; build it (cmake --build $build --target $bin)" >&2
    exit 2
  fi
done
ulimit -n "$(ulimit -Hn)"
exec /usr/bin/python3 "$here/bench.py" "$build" "$@"
