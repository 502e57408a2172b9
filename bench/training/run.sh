#!/usr/bin/env bash
# Training throughput: the C++ example (worker SDK) launched by ddprun against the same model
# in Python with torch.nn.parallel.DistributedDataParallel (Gloo) launched by torchrun, 1 and 2
# workers, same batch size, data size and threads (OMP_NUM_THREADS=1 per worker). Launch time
# is not measured: samples/s comes from rank 0's per-epoch lines.
# PEERS (default "2.6 1.13") chooses the Python DDP peers:
#   2.6: Debian 13's python3-torch in the root scripts/debian_root.sh makes, torchrun 2.6 through
#     scripts/torch2-python and bench/launch/torchrun2_compat.py (that build has no libuv); its
#     workers get TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 USE_LIBUV=0 (rank 0 hosts their store
#     without libuv; their agent-store client would ask for libuv and fail).
#   1.13: the host's python3-torch, torchrun through bench/launch/torchrun_compat.py.
#
#   bench/training/run.sh [BUILD_DIR]   (default: build)
#   env: EPOCHS, SAMPLES, BATCH, REPEAT, PEERS
#   BATCH may list several per-worker batch sizes ("64 128 256"): one table each.
# samples/s = mean over epochs 2..EPOCHS (epoch 1 warms up); per cell the best of REPEAT
# rounds, and for the scaling also the median of the rounds' own 1 -> 2 worker ratios.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
train=$build/bin/cifar10_train
ddprun=$build/bin/ddprun
python=${DDP_TEST_PYTHON:-/usr/bin/python3}
torchrun=("$python" "$here/../launch/torchrun_compat.py")
torchrun2=("$here/../../scripts/torch2-python" "$here/../launch/torchrun2_compat.py")
peers=${PEERS-"2.6 1.13"}
has_peer() { [[ " $peers " == *" $1 "* ]]; }
epochs=${EPOCHS:-4}
samples=${SAMPLES:-8192}
batch_sizes=${BATCH:-64}
repeat=${REPEAT:-2}
for f in "$train" "$ddprun"; do
  [[ -x $f ]] || { echo "missing $f: build the cifar10_train and ddprun targets first" >&2; exit 1; }
done

# run_group cpp|cppnochan|py|pytuned|py26|py26tuned WORKERS : prints the mean samples/s of rank 0's epochs 2..N.
# cppnochan: the C++ example with --no-host-channel (every collective through the process group).
# pytuned: Python with the glibc malloc settings the worker SDK applies itself
# (worker_sdk/include/ddp/host_allocator.h), for a like-for-like comparison.
run_group() {
  local kind=$1 n=$2
  local out; out=$(mktemp)
  local cmd malloc=() extra=() peerenv=()
  if [[ $kind == cpp* ]]; then
    cmd=("$ddprun" --standalone --nproc-per-node "$n" --no-python "$train")
    [[ $kind == cppnochan ]] && extra=(--no-host-channel)
  elif [[ $kind == py26* ]]; then
    cmd=("${torchrun2[@]}" --standalone --nproc_per_node "$n" "$here/cifar10_ddp.py")
    peerenv=(TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 USE_LIBUV=0)
  else
    cmd=("${torchrun[@]}" --standalone --nproc_per_node "$n" "$here/cifar10_ddp.py")
  fi
  [[ $kind == py*tuned ]] && malloc=(MALLOC_MMAP_THRESHOLD_=67108864 MALLOC_TRIM_THRESHOLD_=268435456)
  env OMP_NUM_THREADS=1 "${malloc[@]}" "${peerenv[@]}" "${cmd[@]}" "${args[@]}" "${extra[@]}" >"$out" 2>"$out.err" || { cat "$out" "$out.err" >&2; exit 1; }
  awk '/(^|]:)epoch [0-9]/ { n++; if (n > 1) { s += $NF; k++ } } END { printf "%.1f", s / k }' "$out"
  rm -f "$out" "$out.err"
}

# measure_batch B: one table for per-worker batch size B.
measure_batch() {
  local batch=$1
  args=(--epochs "$epochs" --synthetic-samples "$samples" --batch-size "$batch")
  # Each round runs every cell once, each program's 1-worker run right before its 2-worker
  # run(s), so a pair sees the same machine; the VM's speed drifts by +-10 % over minutes.
  # Reported: the best of REPEAT rounds for each cell, the scaling of those bests, and the
  # median over rounds of each round's own scaling (2 workers / (2 x 1 worker)).
  local c1=() c2=() n2=() p1=() p2=() t1=() t2=() q1=() q2=() u1=() u2=()
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  for ((i = 0; i < repeat; i++)); do
    c1+=("$(run_group cpp 1)")
    c2+=("$(run_group cpp 2)")
    n2+=("$(run_group cppnochan 2)")
    if has_peer 2.6; then
      q1+=("$(run_group py26 1)")
      q2+=("$(run_group py26 2)")
      u1+=("$(run_group py26tuned 1)")
      u2+=("$(run_group py26tuned 2)")
    fi
    if has_peer 1.13; then
      p1+=("$(run_group py 1)")
      p2+=("$(run_group py 2)")
      t1+=("$(run_group pytuned 1)")
      t2+=("$(run_group pytuned 2)")
    fi
  done
  load_after=$(cut -d' ' -f1 /proc/loadavg)

  awk -v c1="${c1[*]}" -v c2="${c2[*]}" -v n2="${n2[*]}" -v p1="${p1[*]}" -v p2="${p2[*]}" \
    -v t1="${t1[*]}" -v t2="${t2[*]}" -v q1="${q1[*]}" -v q2="${q2[*]}" -v u1="${u1[*]}" \
    -v u2="${u2[*]}" -v b="$batch" -v s="$samples" -v r="$repeat" \
    -v n="$(nproc)" -v lb="$load_before" -v la="$load_after" '
  function best(list,   a, k, m, i) { k = split(list, a, " "); m = 0
    for (i = 1; i <= k; i++) if (a[i] + 0 > m) m = a[i] + 0
    return m }
  function median_scaling(one, two,   a, c, k, i, j, t, v) { k = split(one, a, " "); split(two, c, " ")
    for (i = 1; i <= k; i++) v[i] = c[i] / (2 * a[i])
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2 }
  function row(name, one, two) {
    if (one == "") return
    printf "| %s | %.1f | %.1f | %.0f%% | %.0f%% |\n", name, best(one), best(two),
           100 * best(two) / (2 * best(one)), 100 * median_scaling(one, two) }
  BEGIN {
    printf "CIFAR-10-shaped ResNet-style model, %d synthetic samples, batch %d per worker, 1 thread per worker\n\n", s, b
    printf "| program | 1 worker (samples/s, best of %d) | 2 workers (best) | scaling of the bests | scaling, median of %d rounds |\n", r, r
    printf "|---|---|---|---|---|\n"
    row("C++ worker SDK (cifar10_train) under ddprun", c1, c2)
    row("C++, --no-host-channel (all collectives through the process group)", c1, n2)
    row("Python DDP 2.6 (Gloo) under torchrun 2.6", q1, q2)
    row("Python DDP 2.6, SDK malloc settings", u1, u2)
    row("Python DDP 1.13 (Gloo) under torchrun 1.13", p1, p2)
    row("Python DDP 1.13, SDK malloc settings", t1, t2)
    printf "\n"
    if (q1 != "") {
      printf "C++ / Python 2.6 (bests): %.2fx at 1 worker, %.2fx at 2 workers\n", best(c1) / best(q1), best(c2) / best(q2)
      printf "C++ / Python 2.6 with the same malloc settings: %.2fx at 1 worker, %.2fx at 2 workers\n", best(c1) / best(u1), best(c2) / best(u2)
    }
    if (p1 != "") {
      printf "C++ / Python 1.13 (bests): %.2fx at 1 worker, %.2fx at 2 workers\n", best(c1) / best(p1), best(c2) / best(p2)
      printf "C++ / Python 1.13 with the same malloc settings: %.2fx at 1 worker, %.2fx at 2 workers\n", best(c1) / best(t1), best(c2) / best(t2)
    }
    printf "rounds (samples/s): C++ 1w %s | 2w %s | 2w no channel %s\n", c1, c2, n2
    printf "rounds (samples/s): Python 2.6 1w %s | 2w %s; Python 1.13 1w %s | 2w %s\n", q1, q2, p1, p2
    printf "machine: %d cores, 1-minute load average %s before, %s after\n", n, lb, la
  }'
}

first=1
for b in $batch_sizes; do
  ((first)) || echo
  first=0
  measure_batch "$b"
done
