#!/usr/bin/env bash
# Builds ddprun and its unit tests inside a Debian root of scripts/debian_root.sh with that
# release's compiler and libraries (trixie: g++ 14, Boost 1.83, Catch2 3, CMake 3.31; sid: g++ 16,
# Boost 1.92, Catch2 3, CMake 4), a warning being an error, and runs the unit tests there.
# The worker SDK, benchmarks and fuzzers are left out (the SDK has its own 2.x build test).
#
#   scripts/root_build.sh RELEASE      (trixie or sid; build folder build-RELEASE/)
#
# Exits 77 (the tests' "skipped") with the reason when the root is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
CHECKOUT=$(pwd -P)
RELEASE=${1:?usage: scripts/root_build.sh trixie|sid}
case $RELEASE in
  trixie) ROOT=${DDP_TORCH2_ROOT:-/var/lib/ddprun/trixie}; BOOST=() ;;
  sid) ROOT=${DDP_TORCH214_ROOT:-/var/lib/ddprun/sid}; BOOST=(libboost-process-dev) ;;
  *) echo "root_build: unknown release '$RELEASE'; use trixie or sid" >&2; exit 2 ;;
esac
PACKAGES=(g++ cmake ninja-build pkg-config libboost-dev libboost-filesystem-dev "${BOOST[@]}"
          libcli11-dev libspdlog-dev nlohmann-json3-dev catch2 libssl-dev)
in_root() { chroot "$ROOT" /usr/bin/env -C "$CHECKOUT" "$@"; }

if [[ ! -x $ROOT/usr/bin/apt-get || ! -d $ROOT$CHECKOUT/scripts ]]; then
  echo "root_build: no $RELEASE root with this checkout bound in it (scripts/debian_root.sh $RELEASE)" >&2
  exit 77
fi
missing=()
for p in "${PACKAGES[@]}"; do
  in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
BUILD=build-$RELEASE
if [[ ! -f $BUILD/build.ninja ]]; then
  in_root cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_WERROR=ON \
    -DDDP_BUILD_WORKER_SDK=OFF -DDDP_BUILD_BENCH=OFF -DDDP_BUILD_FUZZERS=OFF
fi
in_root cmake --build "$BUILD" --parallel "$(nproc)"
in_root ctest --test-dir "$BUILD" -L unit --output-on-failure -j "$(nproc)"
