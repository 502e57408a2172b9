#!/usr/bin/env bash
# Makes (once) and mounts (after every boot) a Debian root beside the build. The trixie and sid
# roots hold PyTorch 2.x, so tests can run workers, torchrun and the worker SDK under it:
# python3-torch and libtorch-dev from Debian's archive, and what the project needs to build there.
# The bookworm root is bare (a shell and coreutils), for the release tarball's test.
#
#   scripts/debian_root.sh [RELEASE]   make what is missing, mount, say where the root is
#     trixie (default)                 Debian 13, PyTorch 2.6, in $DDP_TORCH2_ROOT
#                                      (default /var/lib/ddprun/trixie)
#     sid                              Debian sid, PyTorch 2.14, in $DDP_TORCH214_ROOT
#                                      (default /var/lib/ddprun/sid)
#     bookworm                         Debian 12, nothing installed, in /var/lib/ddprun/bookworm
#   DDP_NO_TORCH2=1                    do nothing (tests that need PyTorch 2.x are then Skipped)
#
# Idempotent: a root with every package is not touched again; only mounts that are missing are
# made. It never fails the set-up: when the root cannot be made (no root privileges, no archive)
# it says why on one line and the tests that need it report Skipped with that reason.
# Workers run inside it through scripts/torch2-python (chroot shares the host's network, /tmp
# and /dev/shm, and this checkout is bound at its own path, so a worker inside talks to ddprun's
# stores on loopback).
set -uo pipefail

RELEASE=${1:-trixie}
case $RELEASE in
  trixie) ROOT=${DDP_TORCH2_ROOT:-/var/lib/ddprun/trixie} ;;
  sid) ROOT=${DDP_TORCH214_ROOT:-/var/lib/ddprun/sid} ;;
  bookworm) ROOT=/var/lib/ddprun/bookworm ;;
  *) echo "debian root: unknown release '$RELEASE'; use trixie, sid or bookworm" >&2; exit 2 ;;
esac
CHECKOUT=$(cd "$(dirname "$0")/.." && pwd -P)
# PyTorch for the workers, and what scripts/root_build.sh needs to build the project there.
PACKAGES=(python3-torch libtorch-dev libgloo-dev
          g++ cmake ninja-build pkg-config nlohmann-json3-dev libspdlog-dev catch2
          libboost-dev libboost-filesystem-dev libcli11-dev libssl-dev)
[[ $RELEASE == trixie ]] && PACKAGES+=(python3-etcd)  # torchrun's etcd rendezvous tests
[[ $RELEASE == sid ]] && PACKAGES+=(libboost-process-dev)  # Process v2 is compiled in Boost 1.92
[[ $RELEASE == bookworm ]] && PACKAGES=()

say() { echo "debian root ($RELEASE): $*"; }
give_up() {
  say "not made: $* (tests that need this root will be Skipped)"
  exit 0
}

[[ ${DDP_NO_TORCH2:-} == 1 ]] && give_up "DDP_NO_TORCH2=1"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  sudo -n true 2>/dev/null || give_up "chroot and mounts need root or password-less sudo"
  SUDO="sudo"
fi

# The archive this machine's apt uses (deb822 sources or a one-line sources.list); none: give up.
MIRROR=$(grep -hsm1 '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}')
[[ -n $MIRROR ]] || MIRROR=$(grep -hsm1 '^deb ' /etc/apt/sources.list | awk '{print $2}')

mount_once() {  # mount_once TARGET ARGS...: mount unless TARGET is a mount point already
  local target=$1
  shift
  mountpoint -q "$target" || $SUDO mount "$@" "$target"
}

mount_all() {
  mount_once "$ROOT/proc" -t proc proc
  mount_once "$ROOT/sys" -t sysfs sysfs
  local d
  for d in dev dev/pts dev/shm tmp; do
    mount_once "$ROOT/$d" --bind "/$d"
  done
  # This checkout at its own path, so test scripts and built programs have one path in both.
  $SUDO mkdir -p "$ROOT$CHECKOUT"
  mount_once "$ROOT$CHECKOUT" --bind "$CHECKOUT"
  $SUDO cp /etc/hosts "$ROOT/etc/hosts"  # gloo and torchrun resolve this host's name
}

installed() {
  local p
  for p in "${PACKAGES[@]}"; do
    $SUDO chroot "$ROOT" dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
      grep -q "install ok installed" || return 1
  done
}

if [[ ! -x $ROOT/usr/bin/apt-get ]]; then
  command -v debootstrap >/dev/null || give_up "debootstrap is not installed"
  [[ -n $MIRROR ]] || give_up "no archive in /etc/apt/sources.list.d/*.sources or sources.list"
  say "making $ROOT (debootstrap $RELEASE from this machine's archive)"
  $SUDO mkdir -p "$ROOT"
  log=/tmp/ddp_debootstrap_$RELEASE.log
  $SUDO debootstrap --variant=minbase "$RELEASE" "$ROOT" "$MIRROR" >"$log" 2>&1 ||
    give_up "debootstrap failed (log: $log)"
fi
# sid's Release file on an archive snapshot may be past its Valid-Until date.
[[ $RELEASE == sid ]] && echo 'Acquire::Check-Valid-Until "false";' |
  $SUDO tee "$ROOT/etc/apt/apt.conf.d/99ddprun-valid-until" >/dev/null
mount_all || give_up "cannot mount proc, sys, dev and tmp into $ROOT"
if ((${#PACKAGES[@]})) && ! installed; then
  say "installing ${PACKAGES[*]}"
  $SUDO chroot "$ROOT" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
    bash -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${PACKAGES[*]}" \
    >"/tmp/ddp_torch2_packages_$RELEASE.log" 2>&1 ||
    give_up "apt-get in the root failed (log: /tmp/ddp_torch2_packages_$RELEASE.log)"
fi
if [[ $RELEASE == bookworm ]]; then
  say "$ROOT (bare)"
  exit 0
fi
version=$($SUDO chroot "$ROOT" /usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>&1) ||
  give_up "torch does not import in the root: $version"
say "$ROOT, PyTorch $version"

# PyTorch 2.x's own store tests for tests/integration/interop/run_torch_store_suite.py:
# test/distributed/test_store.py and test/distributed/elastic/rendezvous/ from the orig tarball
# of Debian's pytorch source package, into $SUITE inside the root (never in the repo), and the
# packages torch.testing needs to import them. Idempotent; never fails the set-up: when it
# cannot, it says why and the harness test reports Skipped.
fetch_store_tests() {
  local suite=/var/cache/ddprun/pytorch2-tests src=/var/cache/ddprun/pytorch-src
  local marker="$ROOT$suite/test/distributed/test_store.py"
  local test_packages=(python3-setuptools python3-expecttest python3-hypothesis)
  local p missing=()
  for p in "${test_packages[@]}"; do
    $SUDO chroot "$ROOT" dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
      grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    $SUDO chroot "$ROOT" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "${missing[@]}" \
      >/tmp/ddp_torch2_test_packages.log 2>&1 ||
      { say "store tests: apt-get ${missing[*]} failed (log: /tmp/ddp_torch2_test_packages.log)"; return 0; }
  fi
  [[ -f $marker ]] && { say "store tests in $suite"; return 0; }
  echo "deb-src $MIRROR trixie main" | $SUDO tee "$ROOT/etc/apt/sources.list.d/ddprun-src.list" >/dev/null
  $SUDO mkdir -p "$ROOT$src" "$ROOT$suite"
  $SUDO chroot "$ROOT" /usr/bin/env -C "$src" bash -c \
    "ls pytorch_*.orig.tar.* >/dev/null 2>&1 || { apt-get update -qq && apt-get source --download-only -qq pytorch; }" \
    >/tmp/ddp_torch2_source.log 2>&1 ||
    { say "store tests: apt-get source pytorch failed (log: /tmp/ddp_torch2_source.log)"; return 0; }
  # Extracted on the host (the minbase root has no xz).
  $SUDO tar -C "$ROOT$suite" -xaf "$(ls "$ROOT$src"/pytorch_*.orig.tar.* | head -1)" \
    --strip-components=1 --wildcards \
    '*/test/distributed/test_store.py' '*/test/distributed/elastic/rendezvous' \
    >>/tmp/ddp_torch2_source.log 2>&1 ||
    { say "store tests: cannot extract them (log: /tmp/ddp_torch2_source.log)"; return 0; }
  say "store tests in $suite"
}
# sid's pytorch source package is missing from the archive: 2.6's tests serve both roots.
[[ $RELEASE == trixie ]] && fetch_store_tests
exit 0
