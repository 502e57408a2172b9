#!/usr/bin/env bash
# Installs what is missing from Debian's archive (apt-get update only when something
# must be installed), then configures and builds Release into build/ (binaries in
# build/bin/), and makes the PyTorch 2.x root the tests use. Idempotent: a second run
# installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  g++ cmake ninja-build pkg-config dpkg-dev file
  libboost1.81-dev libboost-filesystem1.81-dev libcli11-dev libspdlog-dev nlohmann-json3-dev catch2
  libtorch-dev libgloo-dev python3-torch
  clang libclang-rt-14-dev clang-format help2man
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

# PyTorch 2.x beside the build: a Debian 13 root (scripts/torch2_root.sh; never fails the set-up).
scripts/torch2_root.sh

BUILD_DIR=${BUILD_DIR:-build}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$BUILD_DIR" --parallel "$(nproc)"
