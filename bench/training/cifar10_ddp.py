"""The example's model and training loop in Python, with torch.nn.parallel.DistributedDataParallel
(Gloo): the baseline the C++ example (worker_sdk/examples/cifar10_train.cc) is compared with.
Launched with torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...).
Prints the same per-epoch line as the C++ program on rank 0."""
import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DistributedSampler


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = (nn.Conv2d(cin, cout, 1, stride, bias=False)
                         if stride != 1 or cin != cout else None)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class Net(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.stem = nn.Conv2d(3, w, 3, 2, 1, bias=False)
        self.bn = nn.BatchNorm2d(w)
        self.block1 = Block(w, w, 1)
        self.block2 = Block(w, 2 * w, 2)
        self.fc = nn.Linear(2 * w, 10)

    def forward(self, x):
        y = F.relu(self.bn(self.stem(x)))
        y = self.block2(self.block1(y))
        return self.fc(y.mean((2, 3)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--synthetic-samples", type=int, default=2048)
    p.add_argument("--width", type=int, default=16)
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(a.seed)
    templates = torch.randn(10, 3, 32, 32, generator=g)
    labels = torch.randint(0, 10, (a.synthetic_samples,), generator=g)
    images = templates[labels] + 1.5 * torch.randn(a.synthetic_samples, 3, 32, 32, generator=g)
    net = Net(a.width)
    model = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=0.9, weight_decay=5e-4)
    sampler = DistributedSampler(range(a.synthetic_samples), num_replicas=world, rank=rank,
                                 shuffle=True, seed=a.seed, drop_last=True)
    batches = len(sampler) // a.batch_size
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        order = torch.tensor(list(sampler))
        model.train()
        loss_sum = correct = seen = 0.0
        start = time.monotonic()
        for b in range(batches):
            idx = order[b * a.batch_size:(b + 1) * a.batch_size]
            x, y = images[idx], labels[idx]
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * a.batch_size
            correct += logits.argmax(1).eq(y).sum().item()
            seen += a.batch_size
        totals = torch.tensor([loss_sum, correct, seen], dtype=torch.float64)
        dist.all_reduce(totals)
        seconds = time.monotonic() - start
        if rank == 0:
            print(f"epoch {epoch + 1}/{a.epochs} loss {totals[0] / totals[2]:.4f} "
                  f"accuracy {totals[1] / totals[2]:.4f} samples/s {totals[2] / seconds:.1f}",
                  flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
