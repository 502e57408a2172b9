#!/usr/bin/env bash
# Training throughput: the C++ example (worker SDK) launched by ddprun against the same model
# in Python with torch.nn.parallel.DistributedDataParallel (Gloo) launched by torchrun
# (Debian's 1.13, with bench/launch/torchrun_compat.py's Python 3.11 fix), 1 and 2 workers,
# same batch size, data size and threads (OMP_NUM_THREADS=1 per worker). Launch time is not
# measured: samples/s comes from rank 0's per-epoch lines.
#
#   bench/training/run.sh [BUILD_DIR]   (default: build)   env: EPOCHS, SAMPLES, BATCH, REPEAT
#   BATCH may list several per-worker batch sizes ("64 128 256"): one table each.
# samples/s = mean over epochs 2..EPOCHS (epoch 1 warms up), best of REPEAT runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
train=$build/bin/cifar10_train
ddprun=$build/bin/ddprun
python=${DDP_TEST_PYTHON:-/usr/bin/python3}
torchrun=("$python" "$here/../launch/torchrun_compat.py")
epochs=${EPOCHS:-4}
samples=${SAMPLES:-8192}
batch_sizes=${BATCH:-64}
repeat=${REPEAT:-2}
for f in "$train" "$ddprun"; do
  [[ -x $f ]] || { echo "missing $f: build the cifar10_train and ddprun targets first" >&2; exit 1; }
done

# run_group cpp|py|pytuned WORKERS : prints the mean samples/s of rank 0's epochs 2..N.
# pytuned: Python with the glibc malloc settings the worker SDK applies itself
# (worker_sdk/include/ddp/host_allocator.h), for a like-for-like comparison.
run_group() {
  local kind=$1 n=$2
  local out; out=$(mktemp)
  local cmd malloc=()
  if [[ $kind == cpp ]]; then
    cmd=("$ddprun" --standalone --nproc-per-node "$n" --no-python "$train")
  else
    cmd=("${torchrun[@]}" --standalone --nproc_per_node "$n" "$here/cifar10_ddp.py")
    [[ $kind == pytuned ]] && malloc=(MALLOC_MMAP_THRESHOLD_=67108864 MALLOC_TRIM_THRESHOLD_=268435456)
  fi
  env OMP_NUM_THREADS=1 "${malloc[@]}" "${cmd[@]}" "${args[@]}" >"$out" 2>"$out.err" || { cat "$out" "$out.err" >&2; exit 1; }
  awk '/(^|]:)epoch [0-9]/ { n++; if (n > 1) { s += $NF; k++ } } END { printf "%.1f", s / k }' "$out"
  rm -f "$out" "$out.err"
}

max() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a) ? b : a }'; }

# measure_batch B: one table for per-worker batch size B.
measure_batch() {
  local batch=$1
  args=(--epochs "$epochs" --synthetic-samples "$samples" --batch-size "$batch")
  # Interleaved (C++ 1, Python 1, tuned Python 1, then the same with 2 workers) per round so both see the same machine
  # load; the best of REPEAT rounds is kept for each cell.
  cpp1=0 cpp2=0 py1=0 py2=0 pt1=0 pt2=0
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  for ((i = 0; i < repeat; i++)); do
    cpp1=$(max "$cpp1" "$(run_group cpp 1)")
    py1=$(max "$py1" "$(run_group py 1)")
    pt1=$(max "$pt1" "$(run_group pytuned 1)")
    cpp2=$(max "$cpp2" "$(run_group cpp 2)")
    py2=$(max "$py2" "$(run_group py 2)")
    pt2=$(max "$pt2" "$(run_group pytuned 2)")
  done
  load_after=$(cut -d' ' -f1 /proc/loadavg)

  awk -v c1="$cpp1" -v c2="$cpp2" -v p1="$py1" -v p2="$py2" -v t1="$pt1" -v t2="$pt2" -v b="$batch" -v s="$samples" \
    -v n="$(nproc)" -v lb="$load_before" -v la="$load_after" 'BEGIN {
    printf "CIFAR-10-shaped ResNet-style model, %d synthetic samples, batch %d per worker, 1 thread per worker\n\n", s, b
    printf "| program | 1 worker (samples/s) | 2 workers (samples/s) | scaling 1->2 (%% of ideal) |\n"
    printf "|---|---|---|---|\n"
    printf "| C++ worker SDK (cifar10_train) under ddprun | %.1f | %.1f | %.0f%% |\n", c1, c2, 100 * c2 / (2 * c1)
    printf "| Python DDP (Gloo) under torchrun | %.1f | %.1f | %.0f%% |\n", p1, p2, 100 * p2 / (2 * p1)
    printf "| Python DDP, SDK malloc settings | %.1f | %.1f | %.0f%% |\n", t1, t2, 100 * t2 / (2 * t1)
    printf "\nC++ / Python: %.2fx at 1 worker, %.2fx at 2 workers\n", c1 / p1, c2 / p2
    printf "C++ / Python with the same malloc settings: %.2fx at 1 worker, %.2fx at 2 workers\n", c1 / t1, c2 / t2
    printf "machine: %d cores, 1-minute load average %s before, %s after\n", n, lb, la
  }'
}

first=1
for b in $batch_sizes; do
  ((first)) || echo
  first=0
  measure_batch "$b"
done
