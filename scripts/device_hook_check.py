#!/usr/bin/env python3
"""The Python package's CUDA paths on a real GPU (run by hand or from scripts/device-check.sh):
find_batch_size with real allocations must answer within the best memory band (60-85 % of the
GPU's memory, measured by PyTorch's allocator), and check() must see pin_memory off on a CUDA
model. Prints what it found; exit status 1 when a check fails. Needs python/ on PYTHONPATH."""
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

import baton.torch

if not torch.cuda.is_available():
    print("device_hook_check: no CUDA here")
    sys.exit(0)
props = torch.cuda.get_device_properties(0)
unit = 1 << 30  # each unit of "batch" holds 1 GiB of activations during the step
weight = torch.randn(4096, 4096, device="cuda")


def step(n):
    x = torch.empty(n * unit // 4, device="cuda")  # float32
    y = (x[: 4096 * 4096].view(4096, 4096) @ weight).sum()
    y.item()


r = baton.torch.find_batch_size(step, start=4)
share = r["peak_bytes"] / r["total_bytes"]
print(f"find_batch_size on {props.name}: {r}; peak share {share:.2f}")
ok = 0.60 <= share <= 0.85
model = torch.nn.Linear(8, 8).cuda()
found = baton.torch.check(model=model, loader=DataLoader(TensorDataset(torch.zeros(8, 8)), num_workers=2,
                                                         persistent_workers=True), quiet=True)
rules = sorted(f["rule"] for f in found)
print(f"check() on a CUDA model: {rules}")
ok = ok and rules == ["loader_pin_memory_off"]
print("device_hook_check:", "ok" if ok else "FAILED")
sys.exit(0 if ok else 1)
