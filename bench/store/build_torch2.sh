#!/bin/sh
# Builds the store benchmark's PyTorch programs (torch_store_server, store_load) against the
# LibTorch 2.x inside a Debian root that scripts/debian_root.sh makes: by default the Debian 13
# root (2.6), or the one given, such as the sid root (2.14) of `scripts/debian_root.sh sid`.
# Binaries built on the host do not run there, and the host has only LibTorch 1.13. The root
# must have this checkout bound at its own path (run scripts/debian_root.sh from this checkout
# once), and so must OUT_DIR (a build folder inside the checkout, or under /tmp).
#   bench/store/build_torch2.sh OUT_DIR [ROOT]   (ROOT: $DDP_TORCH2_ROOT or /var/lib/ddprun/trixie)
# then OUT_DIR/torch_store_server, OUT_DIR/store_load.
# Rebuilds a program only when its source is newer. g++ directly: two programs of one file each
# do not need the project's CMake set-up (Boost, CLI11) in the root. C++20 as the project:
# LibTorch 2.14's headers need it (2.6's take it too).
set -eu
src=$(cd "$(dirname "$0")" && pwd -P)
repo=$(cd "$src/../.." && pwd -P)
[ $# -eq 1 ] || [ $# -eq 2 ] || { echo "usage: $0 OUT_DIR [ROOT]" >&2; exit 2; }
ROOT=${2:-${DDP_TORCH2_ROOT:-/var/lib/ddprun/trixie}}
mkdir -p "$1"
out=$(cd "$1" && pwd -P)
[ -d "$ROOT$repo/bench" ] || {
  echo "build_torch2.sh: $ROOT$repo is not this checkout: run scripts/debian_root.sh from it" >&2
  exit 1
}
for prog in torch_store_server store_load; do
  if [ "$out/$prog" -nt "$src/$prog.cc" ] && [ "$out/$prog" -nt "$src/proc_stats.h" ]; then
    continue
  fi
  chroot "$ROOT" g++ -std=c++20 -O2 -DUSE_C10D_GLOO -I"$repo" \
    -isystem /usr/include/torch/csrc/api/include -o "$out/$prog" "$src/$prog.cc" \
    -ltorch -ltorch_cpu -lc10 -pthread
done
