"""A DistributedDataParallel training script in the shape the PyTorch tutorials teach, to run
under ddprun (or torchrun) unchanged:

    ddprun --nproc-per-node 2 examples/python/train_ddp.py --epochs 10
    ddprun --nproc-per-node 2 --max-restarts 3 examples/python/train_ddp.py --checkpoint ck.pt

- The process group comes from the launcher's environment (env://: RANK, WORLD_SIZE,
  MASTER_ADDR, MASTER_PORT); the backend follows the device: NCCL with CUDA, Gloo otherwise.
- DistributedSampler shards the data; set_epoch() reshuffles it every epoch.
- Only rank 0 logs and writes the checkpoint, without DDP's "module." prefix, so a plain model
  loads it; the other ranks wait at a barrier until it is complete.
- After a restart (ddprun --max-restarts) every rank resumes from the last checkpoint.
- Evaluation: each rank scores its shard, all_gather_object() brings the counts together.

The data are synthetic (a fixed random 4-class problem) so the script needs no download.
"""
import argparse
import gc
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

CLASSES = 4
FEATURES = 32


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))

    def forward(self, x):
        return self.layers(x)


def synthetic_data(samples, seed):
    """The same samples on every rank: labels are the argmax of a fixed random projection."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, FEATURES, generator=g)
    w = torch.randn(FEATURES, CLASSES, generator=torch.Generator().manual_seed(1234))
    return TensorDataset(x, (x @ w).argmax(dim=1))


def log(*args):
    if dist.get_rank() == 0:
        print(*args, flush=True)


def save_checkpoint(path, model, optimizer, epoch):
    """Rank 0 writes atomically (temporary file, then rename); every rank returns once done."""
    if dist.get_rank() == 0:
        state = {"epoch": epoch, "model": model.module.state_dict(),
                 "optimizer": optimizer.state_dict()}
        torch.save(state, path + ".tmp")
        os.replace(path + ".tmp", path)
    dist.barrier()  # nobody runs ahead (or restarts) with a half-written checkpoint


def load_checkpoint(path, model, optimizer, device):
    """Returns the first epoch still to run: 0 without a checkpoint."""
    if not path or not os.path.exists(path):
        return 0
    state = torch.load(path, map_location=device)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"] + 1


def evaluate(model, loader, device):
    """Accuracy over the whole validation set: each rank counts its shard."""
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(dim=1) == y).sum().item()
            total += y.numel()
    model.train()
    counts = [None] * dist.get_world_size()
    dist.all_gather_object(counts, (correct, total))
    return sum(c for c, _ in counts) / max(1, sum(t for _, t in counts))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32, help="per worker")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--checkpoint", default="", help="checkpoint file (resumed from if present)")
    args = p.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    dist.init_process_group(backend, init_method="env://")
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    log(f"world size {dist.get_world_size()}, backend {backend}, restart {restart}")

    torch.manual_seed(0)  # the same initial weights everywhere (DDP broadcasts rank 0's anyway)
    model = DDP(Net().to(device), device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    start = load_checkpoint(args.checkpoint, model, optimizer, device)
    if start > 0:
        log(f"resuming from {args.checkpoint} at epoch {start}")

    train = synthetic_data(args.samples, seed=1)
    val = synthetic_data(args.samples // 4, seed=2)
    sampler = DistributedSampler(train, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    val_loader = DataLoader(val, batch_size=256,
                            sampler=DistributedSampler(val, shuffle=False))
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(start, args.epochs):
        sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on every rank
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        accuracy = evaluate(model, val_loader, device)
        log(f"epoch {epoch} loss {loss.item():.4f} val accuracy {accuracy:.3f}")
        if args.checkpoint:
            save_checkpoint(args.checkpoint, model, optimizer, epoch)

    if args.checkpoint and dist.get_rank() == 0:
        plain = Net()  # no DDP, no "module." prefix: the checkpoint loads as it is
        plain.load_state_dict(torch.load(args.checkpoint, map_location="cpu")["model"])
        log(f"checkpoint {args.checkpoint} loads into a plain model")
    # Tear down in this order: the DDP model first, then the process group. If the model
    # outlived destroy_process_group(), its reducer would hold the group's last reference and
    # destroy it while holding the GIL, and PyTorch 1.13's Gloo group can hang there (its
    # destructor joins a worker thread that waits for the GIL to free a tensor).
    dist.barrier()
    del model, optimizer
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
