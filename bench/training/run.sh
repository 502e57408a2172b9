#!/usr/bin/env bash
# Training throughput: the C++ example (worker SDK) against the same model in Python with
# torch.nn.parallel.DistributedDataParallel (Gloo), 1 and 2 workers, same batch size, data
# size and threads (OMP_NUM_THREADS=1 per worker). Workers get torchrun's environment directly
# (Debian's torchrun 1.13 fails on Python 3.11), rank 0 hosting the store, for both programs.
#
#   bench/training/run.sh [BUILD_DIR]   (default: build)   env: EPOCHS, SAMPLES, BATCH, REPEAT
# samples/s = mean over epochs 2..EPOCHS (epoch 1 warms up), best of REPEAT runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
train=$build/bin/cifar10_train
python=${DDP_TEST_PYTHON:-/usr/bin/python3}
epochs=${EPOCHS:-4}
samples=${SAMPLES:-4096}
batch=${BATCH:-64}
repeat=${REPEAT:-2}
[[ -x $train ]] || { echo "missing $train: build the cifar10_train target first" >&2; exit 1; }

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run_group WORKERS CMD... : prints the mean samples/s of rank 0's epochs 2..N.
run_group() {
  local n=$1; shift
  local port; port=$(free_port)
  local out; out=$(mktemp)
  local pids=()
  for ((r = 0; r < n; r++)); do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port TORCHELASTIC_USE_AGENT_STORE=False TORCHELASTIC_RESTART_COUNT=0 \
      OMP_NUM_THREADS=1 "$@" >"$out.$r" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || { cat "$out".*; exit 1; }; done
  awk '/^epoch/ { n++; if (n > 1) { s += $NF; k++ } } END { printf "%.1f", s / k }' "$out.0"
  rm -f "$out" "$out".*
}

# Interleaved (C++ 1, Python 1, C++ 2, Python 2) per round so both see the same machine
# load; the best of REPEAT rounds is kept for each cell.
args=(--epochs "$epochs" --synthetic-samples "$samples" --batch-size "$batch")
max() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a) ? b : a }'; }
cpp1=0 cpp2=0 py1=0 py2=0
load_before=$(cut -d' ' -f1 /proc/loadavg)
for ((i = 0; i < repeat; i++)); do
  cpp1=$(max "$cpp1" "$(run_group 1 "$train" "${args[@]}")")
  py1=$(max "$py1" "$(run_group 1 "$python" "$here/cifar10_ddp.py" "${args[@]}")")
  cpp2=$(max "$cpp2" "$(run_group 2 "$train" "${args[@]}")")
  py2=$(max "$py2" "$(run_group 2 "$python" "$here/cifar10_ddp.py" "${args[@]}")")
done
load_after=$(cut -d' ' -f1 /proc/loadavg)

awk -v c1="$cpp1" -v c2="$cpp2" -v p1="$py1" -v p2="$py2" -v b="$batch" -v s="$samples" \
  -v n="$(nproc)" -v lb="$load_before" -v la="$load_after" 'BEGIN {
  printf "CIFAR-10-shaped ResNet-style model, %d synthetic samples, batch %d per worker, 1 thread per worker\n\n", s, b
  printf "| program | 1 worker (samples/s) | 2 workers (samples/s) | scaling 1->2 (%% of ideal) |\n"
  printf "|---|---|---|---|\n"
  printf "| C++ worker SDK (cifar10_train) | %.1f | %.1f | %.0f%% |\n", c1, c2, 100 * c2 / (2 * c1)
  printf "| Python DDP (Gloo) | %.1f | %.1f | %.0f%% |\n", p1, p2, 100 * p2 / (2 * p1)
  printf "\nC++ / Python: %.2fx at 1 worker, %.2fx at 2 workers\n", c1 / p1, c2 / p2
  printf "machine: %d cores, 1-minute load average %s before, %s after\n", n, lb, la
}'
