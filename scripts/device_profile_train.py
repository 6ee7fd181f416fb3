#!/usr/bin/env python3
"""A training loop with the mistakes `baton profile` is for, and the same loop fixed, for
scripts/device-check.sh (issue 33: a real H200 trace for the tests, and the seed's before/after).

  device_profile_train.py bad|fixed STEPS

bad:   a `.item()` every step (a sync), batches built in pageable host memory and copied with a blocking
       `.to()`, fp32 matmuls with TF32 off (no tensor cores), the batches made in the training process
       (num_workers=0) with some CPU work per sample;
fixed: the loss read every 50 steps, pinned batches copied with non_blocking=True, TF32 on, two
       DataLoader workers (what baton's findings advise).
With the hook (python/ on PYTHONPATH) under `baton run --profile`, the window is taken inside
baton.torch.watch. Without CUDA it runs on the CPU (the fake-GPU run of the check).
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

try:
    import baton.torch as baton_torch
except ImportError:
    baton_torch = None


class Samples(Dataset):
    def __len__(self):
        return 10_000_000

    def __getitem__(self, i):
        x = torch.rand(1024)
        for _ in range(8):  # a little CPU work per sample
            x = (x * 1.01 + 0.01).clamp_(0, 1)
        return x, i % 10


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "bad"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    fixed = mode == "fixed"
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = fixed
    torch.backends.cudnn.allow_tf32 = fixed
    width, batch = (4096, 256) if cuda else (256, 32)  # the CPU stand-in stays quick
    model = torch.nn.Sequential(torch.nn.Linear(1024, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                torch.nn.ReLU(), torch.nn.Linear(width, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Samples(), batch_size=batch, num_workers=2 if fixed else 0, pin_memory=fixed and cuda,
                        persistent_workers=fixed)
    running = torch.zeros((), device=device)
    for step, (x, y) in enumerate(baton_torch.watch(loader) if baton_torch else loader):
        x, y = x.to(device, non_blocking=fixed), y.to(device, non_blocking=fixed)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if fixed:
            running += loss.detach()
            if (step + 1) % 50 == 0:
                print(f"step {step + 1} loss {running.item() / 50:.3f}", flush=True)
                running.zero_()
        else:
            print(f"step {step + 1} loss {loss.item():.3f}", flush=True)  # a sync every step
        if step + 1 >= steps:
            break
    print(f"{mode}: {steps} steps on {device}", flush=True)


if __name__ == "__main__":
    main()
