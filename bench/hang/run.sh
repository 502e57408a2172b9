#!/bin/sh
# Hang benchmark: torchrun 1.13 and ddprun serving PyTorch's file timer, side by
# side; plus the worker SDK's cost per heartbeat when the SDK is built.
# usage: bench/hang/run.sh [BUILD_DIR] [--repeats N]   (BUILD_DIR defaults to build/)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-"$here/../../build"}
[ $# -gt 0 ] && shift
ddprun="$build/bin/ddprun"
if [ ! -x "$ddprun" ]; then
  echo "run.sh: $ddprun not found; build it first (cmake --build $build --target ddprun)" >&2
  exit 2
fi
/usr/bin/python3 "$here/bench.py" "$ddprun" "$@"
# beat_cost exists where the SDK is built (not part of `all`: built here).
cmake --build "$build" --target beat_cost >/dev/null 2>&1 || true
if [ -x "$build/bin/beat_cost" ]; then
  echo
  "$build/bin/beat_cost"
fi
