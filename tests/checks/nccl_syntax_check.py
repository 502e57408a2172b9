"""Compiles the NCCL branch of the worker SDK (worker_sdk/src/process_group.cc with
DDP_WITH_NCCL) for syntax only, so that it cannot rot on machines without a CUDA LibTorch.

It reuses the translation unit's own compile command from the build's compile_commands.json
(LibTorch's include directories, the project's flags) and adds the NCCL defines and the CUDA
headers; -DC10_CUDA_NO_CMAKE_CONFIGURE_FILE lets c10/cuda's headers parse without the
configure-time header a CPU LibTorch does not ship. Nothing is linked or run: Debian's
LibTorch has no CUDA code. Usage:
    nccl_syntax_check.py BUILD_DIR SOURCE_FILE CUDA_ROOT
Exit 0: it compiles; 1: it does not (the compiler's errors are printed); 77 (CTest: Skipped):
nccl.h or the CUDA runtime headers are missing, or the SDK is not part of this build.
"""
import json
import os
import shlex
import subprocess
import sys

SKIP = 77


def main():
    build_dir, source, cuda_root = sys.argv[1:4]
    include = os.path.join(cuda_root, "include")
    for header in ("nccl.h", "cuda_runtime_api.h"):
        if not os.path.exists(os.path.join(include, header)):
            print("skipped: %s not found in %s (set DDP_CUDA_ROOT to a CUDA with NCCL)"
                  % (header, include))
            return SKIP
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    source = os.path.realpath(source)
    entry = next((e for e in entries if os.path.realpath(e["file"]) == source), None)
    if entry is None:
        print("skipped: %s is not in this build (worker SDK off or LibTorch missing)" % source)
        return SKIP
    argv = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip_next = [], False
    for arg in argv:  # the compile command without its output: -fsyntax-only writes nothing
        if skip_next:
            skip_next = False
        elif arg in ("-o", "-MF", "-MT", "-MQ"):
            skip_next = True
        elif arg not in ("-c", "-MD", "-MMD"):
            out.append(arg)
    out[1:1] = ["-fsyntax-only", "-DDDP_WITH_NCCL", "-DUSE_C10D_NCCL",
                "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE", "-isystem", include]
    print(" ".join(shlex.quote(a) for a in out), flush=True)
    rc = subprocess.call(out, cwd=entry["directory"])
    print("NCCL branch compiles (syntax only)" if rc == 0 else "NCCL branch does not compile")
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
