#!/usr/bin/env bash
# Makes ddprun-VERSION-linux-x86_64.tar.gz: ddprun and ddp-rendezvous linked statically against
# everything but glibc (cmake/StaticRelease.cmake: the same objects as the build's own programs),
# so the two programs run on any x86-64 Linux with glibc >= 2.34 (RHEL 9, Ubuntu 22.04, Debian 12
# and newer); their man pages, shell completions, the user docs and examples, and the worker
# SDK's sources (the SDK is a library built against the user's own LibTorch: sdk/README.md in the
# tarball says how).
#
#   scripts/release.sh [OUT_DIR [BUILD_DIR]]   (the tarball lands in OUT_DIR, default
#                                              build-release/; BUILD_DIR is scripts/setup.sh's
#                                              build folder, default build/, configured if new)
#
# Builds on Debian 12, the oldest glibc the tarball supports (cmake/release/logging.cc is written
# for its fmt and spdlog). Fails, naming the cause, when a program needs a shared library other
# than glibc's or a glibc symbol newer than 2.34. Needs scripts/setup.sh's packages. Idempotent:
# a second run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
OUT=$(mkdir -p "${1:-build-release}" && cd "${1:-build-release}" && pwd)
BUILD=${2:-build}
MAX_GLIBC=2.34

if [[ ! -f $BUILD/build.ninja ]]; then
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/configure.log" ||
    { cat "$OUT/configure.log"; exit 1; }
fi
cmake --build "$BUILD" --parallel "$(nproc)" --target ddprun_release ddp-rendezvous_release man_pages

fail() { echo "release: $*" >&2; exit 1; }
for program in ddprun ddp-rendezvous; do
  bin=$BUILD/static/$program
  # Only glibc's own libraries (and the kernel's vDSO) may be needed at run time.
  others=$(ldd "$bin" | awk '{print $1}' |
    grep -Ev '^(linux-vdso\.so|/lib64/ld-linux-x86-64\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so)' ||
    true)
  [[ -z $others ]] || fail "$program needs shared libraries besides glibc: $others"
  newest=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
  [[ $(printf '%s\n%s\n' "$newest" "$MAX_GLIBC" | sort -V | tail -1) == "$MAX_GLIBC" ]] ||
    fail "$program uses a glibc $newest symbol ($(objdump -T "$bin" | grep "GLIBC_$newest" |
      awk '{print $NF}' | tr '\n' ' ')); at most $MAX_GLIBC is allowed"
done

version=$("$BUILD/static/ddprun" --version | awk '{print $2}')
name=ddprun-$version-linux-x86_64
stage=$OUT/$name
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/share/man/man1" "$stage/share/doc/ddprun" \
  "$stage/share/bash-completion/completions" "$stage/share/zsh/site-functions" "$stage/sdk"
install -m 755 -s "$BUILD/static/ddprun" "$BUILD/static/ddp-rendezvous" "$stage/bin/"
install -m 644 "$BUILD"/man/*.1 "$stage/share/man/man1/"
"$stage/bin/ddprun" --print-completion bash >"$stage/share/bash-completion/completions/ddprun"
"$stage/bin/ddprun" --print-completion zsh >"$stage/share/zsh/site-functions/_ddprun"
cp -r README.md docs examples "$stage/share/doc/ddprun/"
cp -r scripts/jobs "$stage/share/doc/ddprun/examples/jobs"
# The SDK's sources as its own project: the top CMakeLists.txt in SDK-only mode, cmake/,
# common/ and worker_sdk/.
cp -r CMakeLists.txt cmake common worker_sdk "$stage/sdk/"
cat >"$stage/sdk/README.md" <<'EOF'
# The ddprun worker SDK, from source

A C++ library over LibTorch for ddprun's workers (docs: ../share/doc/ddprun/docs/worker_sdk.md).
It is built against your own LibTorch (Debian's libtorch-dev, or the libtorch of a pip PyTorch:
`python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'`) and needs spdlog and
nlohmann-json:

    cmake -S . -B build -DDDP_SDK_ONLY=ON -DDDP_BUILD_TESTS=OFF -DCMAKE_PREFIX_PATH=<libtorch>
    cmake --build build && cmake --install build --prefix ~/.local

then `find_package(ddp_worker_sdk REQUIRED)` and `target_link_libraries(t PRIVATE
ddp::worker_sdk)` in your project.
EOF
tar -C "$OUT" -czf "$OUT/$name.tar.gz" "$name"
echo "release: $OUT/$name.tar.gz (glibc symbols up to $MAX_GLIBC; no other shared library)"
