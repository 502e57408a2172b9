#!/usr/bin/env bash
# Builds the whole project (ddprun, its tests and the worker SDK against the root's LibTorch)
# inside a Debian root of scripts/debian_root.sh with that release's compiler and libraries,
# a warning being an error, and runs the unit tests there. trixie: g++ 14, Boost 1.83, Catch2 3,
# CMake 3.31, LibTorch 2.6; sid: g++ 16, Boost 1.92, Catch2 3, CMake 4, LibTorch 2.14. The
# benchmarks and fuzzers are left out: they run on the host only. CTest runs it as
# root_build_trixie and root_build_sid (tests/CMakeLists.txt), each before its NCCL check.
#
#   scripts/root_build.sh RELEASE [BUILD_DIR]   (trixie or sid; default build-RELEASE/)
#   scripts/root_build.sh --nccl RELEASE BUILD_DIR CUDA_ROOT
#
# --nccl: tests/checks/nccl_syntax_check.py in the root with BUILD_DIR's compile commands (a
# build above must have configured it): the SDK's NCCL branch against that LibTorch's headers.
# CUDA_ROOT/include is copied into BUILD_DIR/cuda, since the root does not see /usr/local.
# BUILD_DIR is kept, so a second run builds only what changed. Exits 77 (the tests' "skipped")
# with the reason when the root, its mounts or the rights to chroot are missing.
set -uo pipefail
nccl=0
[[ ${1:-} == --nccl ]] && nccl=1 && shift
SRC=$(cd "$(dirname "$0")/.." && pwd -P)
RELEASE=${1:?usage: scripts/root_build.sh [--nccl] trixie|sid [BUILD_DIR [CUDA_ROOT]]}
BUILD=${2:-$SRC/build-$RELEASE}
CUDA_ROOT=${3:-}
case $RELEASE in
  trixie) ROOT=${DDP_TORCH2_ROOT:-/var/lib/ddprun/trixie} ;;
  sid) ROOT=${DDP_TORCH214_ROOT:-/var/lib/ddprun/sid} ;;
  *) echo "root_build: unknown release '$RELEASE'; use trixie or sid" >&2; exit 2 ;;
esac
skip() {
  echo "SKIPPED: $*"
  exit 77
}

[[ -f $ROOT/usr/include/torch/csrc/api/include/torch/version.h && -x $ROOT/usr/bin/cmake ]] ||
  skip "no $RELEASE root with its build packages at $ROOT (scripts/debian_root.sh $RELEASE makes it)"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  sudo -n true 2>/dev/null || skip "chroot needs root or password-less sudo"
  SUDO="sudo"
fi
mkdir -p "$BUILD" && BUILD=$(cd "$BUILD" && pwd -P) || exit 1
# The same folder inside and out: the checkout (or /tmp) is bound into the root at its own path.
[[ $ROOT$BUILD -ef $BUILD && $ROOT$SRC -ef $SRC ]] ||
  skip "$SRC or $BUILD is not bound into $ROOT (run scripts/debian_root.sh $RELEASE from this checkout)"
in_root() { $SUDO chroot --userspec="$(id -u):$(id -g)" "$ROOT" /usr/bin/env -C "$BUILD" "$@"; }

if ((nccl)); then
  [[ -f $CUDA_ROOT/include/nccl.h && -f $CUDA_ROOT/include/cuda_runtime_api.h ]] ||
    skip "nccl.h or cuda_runtime_api.h not found in $CUDA_ROOT/include"
  [[ -f $BUILD/compile_commands.json ]] ||
    skip "$BUILD is not configured (scripts/root_build.sh $RELEASE $BUILD configures it)"
  [[ -f $BUILD/cuda/include/nccl.h ]] ||
    { mkdir -p "$BUILD/cuda" && cp -r "$CUDA_ROOT/include" "$BUILD/cuda/"; } || exit 1
  in_root /usr/bin/python3 "$SRC/tests/checks/nccl_syntax_check.py" "$BUILD" \
    "$SRC/worker_sdk/src/process_group.cc" "$BUILD/cuda"
  exit
fi

if [[ ! -f $BUILD/build.ninja ]]; then
  in_root cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_WERROR=ON \
    -DDDP_BUILD_BENCH=OFF -DDDP_BUILD_FUZZERS=OFF -DDDP_TEST_PYTHON=/usr/bin/python3 || exit 1
fi
start=$SECONDS
in_root cmake --build "$BUILD" --parallel "$(nproc)" || exit 1
echo "built in the $RELEASE root in $((SECONDS - start)) s"
in_root ctest -L unit --output-on-failure -j "$(nproc)"
