#!/usr/bin/env bash
# Installs what is missing from Debian's archive (Debian 12, 13 or sid; apt-get update only when
# something must be installed), then configures and builds Release into build/ (binaries in
# build/bin/), and makes the PyTorch 2.6 and 2.14 roots the tests use. Idempotent: a second run
# installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian 12, 13 and sid: the release's own names. Only Boost differs: Debian 12's default Boost
# (1.74) predates Process v2, so there the 1.81 packages; later releases' default is new enough,
# and after 13 (1.83) Process is a compiled library with a package of its own.
. /etc/os-release
case ${VERSION_CODENAME:-} in
  bookworm) BOOST=(libboost1.81-dev libboost-filesystem1.81-dev) ;;
  trixie) BOOST=(libboost-dev libboost-filesystem-dev) ;;
  *) BOOST=(libboost-dev libboost-filesystem-dev libboost-process-dev) ;;
esac
PACKAGES=(
  g++ cmake ninja-build pkg-config dpkg-dev file
  "${BOOST[@]}" libcli11-dev libspdlog-dev nlohmann-json3-dev catch2
  libtorch-dev libgloo-dev python3-torch
  clang libclang-rt-dev clang-format help2man
  iproute2 procps psmisc
  etcd-server etcd-client python3-etcd libssl-dev
  openssh-server openssh-client
  slurm-client slurmctld slurmd munge
  debootstrap
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian roots beside the build (scripts/debian_root.sh; never fails the set-up): 13 and sid with
# PyTorch 2.6 and 2.14 for the workers of the tests, and a bare 12 for the release tarball's test.
for release in trixie sid bookworm; do
  scripts/debian_root.sh "$release"
done

BUILD_DIR=${BUILD_DIR:-build}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  # CI (CI=true) fails on a compiler warning; a user's newer compiler only warns.
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_WERROR="${CI:+ON}"
fi
cmake --build "$BUILD_DIR" --parallel "$(nproc)"

# ddprun 0.1, for the version-skew tests.
scripts/old_ddprun.sh "$BUILD_DIR"
