#!/bin/sh
# Cross-node teardown benchmark (issue #4): a worker failure on one node -> the last worker
# stopped on the other node, for ddprun and torchrun 2.6 (Debian 13 root) and 1.13 side by side,
# real agents in two network namespaces (c10d). Needs root. Not a CTest: a measurement.
# usage: bench/teardown/run.sh [BUILD_DIR] [--repeats N] [--torchrun-repeats M] [--cap S]
#                              [--no-torchrun] [--peers 2.6,1.13]   (BUILD_DIR defaults to build/)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-"$here/../../build"}
[ $# -gt 0 ] && shift
ddprun="$build/bin/ddprun"
if [ ! -x "$ddprun" ]; then
  echo "run.sh: $ddprun not found; build it first (cmake --build $build --target ddprun)" >&2
  exit 2
fi
exec /usr/bin/python3 "$here/bench.py" "$ddprun" "$@"
