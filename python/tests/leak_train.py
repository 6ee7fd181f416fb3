"""A training loop on the fake allocator of fake_cuda_memory.py (a 2 MiB GPU) that keeps 64 KiB of each
step (a loss summed without .item(), say): what the steps keep climbs until the GPU is about full.
Usage: leak_train.py STEPS."""
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

import fake_cuda_memory as fake

fake.install()
import baton.torch  # noqa: E402  (after the fake: the hook sees CUDA)

model = torch.nn.Linear(8, 8)
for p in model.parameters():
    fake.track(p)
kept = []
for (x,) in baton.torch.watch(DataLoader(TensorDataset(torch.ones(4 * int(sys.argv[1]), 8)), batch_size=4)):
    model(x).sum().backward()
    kept.append(torch.empty(16384))  # 64 KiB kept from each step
    fake.track(kept[-1])
    time.sleep(0.02)
