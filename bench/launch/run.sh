#!/bin/sh
# Launch benchmark: ddprun side by side with torchrun 2.14 (the Debian sid root), 2.6 (the
# Debian 13 root) and 1.13 (host).
# usage: bench/launch/run.sh [BUILD_DIR] [--repeats N] [--peers 2.14,2.6,1.13]
#   (BUILD_DIR: build/; --peers defaults to all three)
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
