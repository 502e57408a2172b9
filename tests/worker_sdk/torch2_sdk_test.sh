#!/usr/bin/env bash
# Builds the worker SDK and its unit tests against the LibTorch of a Debian root
# (scripts/debian_root.sh: trixie has 2.6, sid 2.14) and runs them there. CTest runs it
# (tests/worker_sdk/CMakeLists.txt).
#
#   torch2_sdk_test.sh RELEASE SOURCE_DIR BUILD_DIR
#   torch2_sdk_test.sh --nccl RELEASE SOURCE_DIR BUILD_DIR CUDA_ROOT
#
# --nccl: tests/checks/nccl_syntax_check.py inside the root against BUILD_DIR's compile commands
# (the build above must have configured it): the NCCL branch against that LibTorch's headers.
# CUDA_ROOT/include is copied into BUILD_DIR/cuda, since the root does not see /usr/local.
# BUILD_DIR is kept between runs, so a second run rebuilds only what changed. The root's build
# configures the SDK alone (-DDDP_SDK_ONLY=ON) with the root's own Catch2 (v3), a warning being
# an error. Exits 77 (Skipped) with the reason when the root, its mounts or the rights to
# chroot are missing.
set -uo pipefail

nccl=0
[[ $1 == --nccl ]] && nccl=1 && shift
release=$1 src=$2 build=$3 cuda_root=${4:-}
case $release in
  trixie) ROOT=${DDP_TORCH2_ROOT:-/var/lib/ddprun/trixie} ;;
  sid) ROOT=${DDP_TORCH214_ROOT:-/var/lib/ddprun/sid} ;;
  *) echo "torch2_sdk_test: unknown release '$release'; use trixie or sid" >&2; exit 2 ;;
esac
skip() {
  echo "SKIPPED: $*"
  exit 77
}

[[ -f $ROOT/usr/include/torch/csrc/api/include/torch/version.h && -x $ROOT/usr/bin/cmake ]] ||
  skip "no $release root with libtorch-dev and cmake at $ROOT (scripts/debian_root.sh $release makes it)"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  sudo -n true 2>/dev/null || skip "chroot needs root or password-less sudo"
  SUDO="sudo"
fi
mkdir -p "$build/cuda" || exit 1
# The same folder inside and out: the checkout (or /tmp) is bound into the root at its own path.
[[ $ROOT$build -ef $build && $ROOT$src -ef $src ]] ||
  skip "$src or $build is not bound into $ROOT (run scripts/debian_root.sh $release from this checkout)"
in_root() { $SUDO chroot --userspec="$(id -u):$(id -g)" "$ROOT" /usr/bin/env -C "$build" "$@"; }

if ((nccl)); then
  [[ -f $cuda_root/include/nccl.h && -f $cuda_root/include/cuda_runtime_api.h ]] ||
    skip "nccl.h or cuda_runtime_api.h not found in $cuda_root/include"
  [[ -f $build/compile_commands.json ]] ||
    skip "$build is not configured (torch2_sdk_test.sh $release without --nccl configures it)"
  [[ -f $build/cuda/include/nccl.h ]] || cp -r "$cuda_root/include" "$build/cuda/" || exit 1
  in_root /usr/bin/python3 "$src/tests/checks/nccl_syntax_check.py" "$build" \
    "$src/worker_sdk/src/process_group.cc" "$build/cuda"
  exit
fi

if [[ ! -f $build/build.ninja ]]; then
  in_root cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_SDK_ONLY=ON \
    -DDDP_WERROR=ON -DDDP_TEST_PYTHON=/usr/bin/python3 || exit 1
fi
start=$SECONDS
in_root cmake --build "$build" -j2 --target worker_sdk_tests || exit 1
echo "built in the root in $((SECONDS - start)) s"
in_root "$build/bin/worker_sdk_tests"  # every case
