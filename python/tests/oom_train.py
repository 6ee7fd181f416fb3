"""A training loop whose batch doubles each step (4, 8, ..., 128) on the fake allocator of
fake_cuda_memory.py (a 2 MiB GPU): each of its two layers' outputs takes 8 KiB a sample (the
activations, freed at the step's end); at a batch of 128 the second layer's 1 MiB does not fit beside
the first's, and CUDA runs out of memory in the forward pass. Usage: oom_train.py [--no-observer]."""
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

import fake_cuda_memory as fake

fake.install(observer="--no-observer" not in sys.argv)
import baton.torch  # noqa: E402  (after the fake: the hook sees CUDA)


class Layer(torch.nn.Module):
    def forward(self, x):
        fake.alloc(x.shape[0] * (8 << 10))  # its output: 8 KiB a sample
        return x


model = torch.nn.Sequential(torch.nn.Linear(8, 8), Layer(), Layer())
opt = torch.optim.Adam(model.parameters())
for p in model.parameters():
    fake.track(p)
batches = [list(range(n)) for n in (4, 8, 16, 32, 64, 128)]
for (x,) in baton.torch.watch(DataLoader(TensorDataset(torch.ones(128, 8)), batch_sampler=batches)):
    model(x).sum().backward()
    opt.step()
    opt.zero_grad()
    fake.free_step()
