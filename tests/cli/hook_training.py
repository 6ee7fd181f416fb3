"""A real PyTorch training loop (Debian's python3-torch, CPU) with baton's hook, for the hook's
integration test: `slow` reads every sample with a 25 ms wait (num_workers=0: the loop waits for
data most of each step); `fast` takes its batches from memory while each step computes ~15 ms.

  hook_training.py slow|fast SECONDS
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

import baton.torch


class Samples(Dataset):
    def __init__(self, delay):
        self.delay = delay
        self.data = torch.randn(4096, 32)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)  # a slow disk or decoder
        return self.data[i], i % 4


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Samples(0.025 if mode == "slow" else 0), batch_size=4, num_workers=0)
    work = torch.randn(160, 160)
    end = time.time() + seconds
    steps = 0
    while time.time() < end:
        for x, y in baton.torch.watch(loader):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if mode == "fast":
                deadline = time.perf_counter() + 0.015
                while time.perf_counter() < deadline:  # the step's compute
                    work = torch.tanh(work @ work)
            steps += 1
            if time.time() >= end:
                break
    print(f"{mode}: {steps} steps")


if __name__ == "__main__":
    main()
