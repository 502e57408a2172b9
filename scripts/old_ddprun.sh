#!/usr/bin/env bash
# Builds `ddprun` of ddprun 0.1 (native protocol 1; its last commit is kept below) into
# BUILD_DIR/compat/ddprun-0.1.0, for the version-skew tests (tests/integration/compat), which
# run it against this build. Idempotent. Without that commit (a shallow clone) it says so and
# exits 0: those tests then show as skipped.
#   scripts/old_ddprun.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
COMMIT=819286e376c233679f12521bf03cb8f23e337edf
OUT=$(realpath -m "${1:-build}/compat")
BIN=$OUT/ddprun-0.1.0
[[ -x $BIN ]] && exit 0
if ! git cat-file -e "$COMMIT^{commit}" 2>/dev/null; then
  echo "old_ddprun: commit $COMMIT (ddprun 0.1) is not in this clone; the version-skew tests will be skipped"
  exit 0
fi
work=$OUT/work
rm -rf "$work"
mkdir -p "$work/src"
git archive "$COMMIT" | tar -x -C "$work/src"
echo "old_ddprun: building ddprun 0.1 (product only, -O0) into $BIN"
# -O0: a test binary, built once per machine; the product alone, not its tests or the SDK.
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O0 -g0" -DDDP_BUILD_TESTS=OFF -DDDP_BUILD_WORKER_SDK=OFF \
  -DDDP_BUILD_BENCH=OFF -DDDP_BUILD_FUZZERS=OFF >"$work/configure.log"
cmake --build "$work/build" --target ddprun --parallel "$(nproc)" >"$work/build.log"
cp "$work/build/bin/ddprun" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
rm -rf "$work"
