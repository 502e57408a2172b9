#!/usr/bin/env bash
# The main job: sets up and builds (scripts/setup.sh), then trains the worker SDK's
# ResNet-style CIFAR-10 classifier (synthetic data; pass --data DIR for real CIFAR-10
# binary batches) under ddprun with 2 workers, checkpointing as it goes. Rank 0 prints
# loss, accuracy and samples/s per epoch: the loss falls.
#   scripts/demo.sh [extra cifar10_train flags, e.g. --epochs 6 --data ~/cifar-10-batches-bin]
# scripts/demo_store.sh shows the store daemon with a real PyTorch client.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
BIN=${BUILD_DIR:-build}/bin
CKPT=$(mktemp -d -t ddprun-demo-XXXXXX)
trap 'rm -rf "$CKPT"' EXIT

echo "== ddprun --nproc-per-node 2 --max-restarts 1 --no-python $BIN/cifar10_train --epochs 4 ..."
"$BIN/ddprun" --nproc-per-node 2 --max-restarts 1 \
  --no-python "$BIN/cifar10_train" --epochs 4 --checkpoint-dir "$CKPT" "$@"
echo "== done: both workers exited 0; checkpoint was in $CKPT"
