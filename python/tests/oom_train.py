"""A training loop that runs out of (fake) CUDA memory in the forward pass of step 3, with the fake
allocator of fake_cuda_memory.py (a 2 MiB GPU): the activations it keeps across steps (256 KiB a step,
tracked with their allocation stack) outweigh the model when a 1.5 MiB request fails. Usage:
oom_train.py [--no-observer]."""
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

import fake_cuda_memory as fake

fake.install(observer="--no-observer" not in sys.argv)
import baton.torch  # noqa: E402  (after the fake: the hook sees CUDA)


class Boom(torch.nn.Module):
    def forward(self, x):
        if baton.torch._steps.count >= 3:
            fake.fake_alloc(3 << 19)
        return x


model = torch.nn.Sequential(torch.nn.Linear(8, 8), Boom())
opt = torch.optim.Adam(model.parameters())
for p in model.parameters():
    fake.track(p)
loader = DataLoader(TensorDataset(torch.ones(64, 8)), batch_size=4)
kept = []
for (x,) in baton.torch.watch(loader):
    out = model(x)
    activation = torch.empty(65536)  # 256 KiB saved for backward
    kept.append(activation)
    fake.track(activation, [{"filename": "/home/ana/oom_train.py", "line": 30, "name": "forward"}])
    out.sum().backward()
    opt.step()
    opt.zero_grad()
