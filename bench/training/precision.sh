#!/usr/bin/env bash
# Mixed precision against float32: the C++ example with 2 workers started by itself
# (cifar10_train --spawn 2), in four configurations: float32; gradients exchanged as bfloat16
# (--grad-dtype bf16); forward under bfloat16 autocast (--autocast bf16); both.
#
#   bench/training/precision.sh [BUILD_DIR]   (default: build)
#   env: EPOCHS (4), SAMPLES (4096), BATCH (64), WIDTH (16), REPEAT (2), WORKERS (2),
#        FLAGS (more cifar10_train flags for every run, e.g. "--gather-max-kib 0")
# Per configuration, per round: samples/s = rank 0's mean over epochs 2..EPOCHS (epoch 1 warms
# up), gradient bytes each worker sends per step (the example's own count, see
# GradientReducer::sent_bytes_per_step), and the last epoch's loss and accuracy. Reported: the
# best samples/s of REPEAT interleaved rounds, and the loss/accuracy of every round.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
train=$build/bin/cifar10_train
[[ -x $train ]] || { echo "missing $train: build the cifar10_train target first" >&2; exit 1; }
epochs=${EPOCHS:-4}
samples=${SAMPLES:-4096}
batch=${BATCH:-64}
width=${WIDTH:-16}
repeat=${REPEAT:-2}
workers=${WORKERS:-2}
common=${FLAGS:-}
names=("float32" "bf16 gradients" "bf16 autocast" "bf16 autocast + gradients")
flags=("" "--grad-dtype bf16" "--autocast bf16" "--autocast bf16 --grad-dtype bf16")

# run_one FLAGS: prints "samples/s bytes loss accuracy" for one run.
run_one() {
  local out; out=$(mktemp)
  # shellcheck disable=SC2086  # FLAGS is a word list
  OMP_NUM_THREADS=1 "$train" --spawn "$workers" --epochs "$epochs" --synthetic-samples "$samples" \
    --batch-size "$batch" --width "$width" $common $1 >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
  awk '/bytes sent per step/ { for (i = 1; i <= NF; i++) if ($i == "bytes") b = $(i - 1); sub(",", "", b) }
       /^epoch [0-9]/ { n++; if (n > 1) { s += $NF; k++ } loss = $4; acc = $6 }
       END { printf "%.1f %s %s %s", s / k, b, loss, acc }' "$out"
  rm -f "$out"
}

declare -A results
for ((r = 0; r < repeat; r++)); do
  for i in "${!flags[@]}"; do results[$i]+="$(run_one "${flags[$i]}");"; done
done

echo "cifar10_train --spawn $workers, $samples synthetic samples, batch $batch per worker, width $width,"
echo "$epochs epochs, 1 thread per worker${common:+, flags $common}; samples/s best of $repeat rounds (epochs 2..$epochs)"
echo
echo "| configuration | samples/s | gradient bytes sent per step per worker | final loss / accuracy (each round) |"
echo "|---|---:|---:|---|"
for i in "${!flags[@]}"; do
  awk -v name="${names[$i]}" -v runs="${results[$i]}" 'BEGIN {
    k = split(runs, r, ";"); best = 0; fin = ""
    for (j = 1; j < k; j++) { split(r[j], f, " "); if (f[1] + 0 > best) best = f[1] + 0; bytes = f[2]
      fin = fin (j > 1 ? ", " : "") f[3] " / " f[4] }
    printf "| %s | %.1f | %s | %s |\n", name, best, bytes, fin }'
done
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1 /proc/loadavg)"
