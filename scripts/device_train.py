#!/usr/bin/env python3
"""A small, deliberately input-bound PyTorch training loop for scripts/device-check.sh.

Two DataLoader workers do per-sample CPU work (a Python loop of small tensor operations,
one thread each) for a convolutional model that the GPU finishes in a fraction of the
time: the GPU waits for data, the workers' cores are saturated. This is the case baton's
input_bound finding exists for, on a real GPU, so the check shows whether `baton run`
sees it (job CPU, GPU utilisation, the finding and its num_workers advice).

  device_train.py SECONDS [WORKERS]     (DEVICE_TRAIN_NO_HOOK=1: without baton.torch.watch)
Without CUDA it trains on the CPU (a stand-in used by the fake-GPU run of the check).
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

import os

try:  # baton's hook: the steps' time and data wait reach `baton run` (DEVICE_TRAIN_NO_HOOK=1: left to the
    # automatic steps, which baton's shim measures with no code change)
    if os.environ.get("DEVICE_TRAIN_NO_HOOK") == "1":
        raise ImportError
    import baton.torch as baton_torch
except ImportError:
    baton_torch = None


class SlowImages(Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        x = torch.rand(3, 64, 64)
        for _ in range(60):  # "augmentation": CPU work per sample
            x = (x * 1.01 + 0.01).clamp_(0, 1)
        return x, i % 10


def init_worker(_):
    torch.set_num_threads(1)  # one core per worker, as DataLoader workers usually are


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 40.0
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10),
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowImages(), batch_size=64, num_workers=workers, worker_init_fn=init_worker,
                        pin_memory=device == "cuda")
    end = time.time() + seconds
    step = 0
    for x, y in (baton_torch.watch(loader) if baton_torch else loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.3f}", flush=True)
        if time.time() > end:
            break
    print(f"trained {step} steps on {device} in {seconds:.0f} s", flush=True)


if __name__ == "__main__":
    main()
