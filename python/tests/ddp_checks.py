"""Run by test_checks.py under torchrun with two CPU ranks (gloo): baton.torch.check on a DDP setup,
`bad` (plain BatchNorm, no DistributedSampler, a different seed per rank) or `good` (all fixed; the
norm layer is a LayerNorm there, since DDP on the CPU refuses SyncBatchNorm, which needs GPUs).
Prints "rank R: rule,rule,..." and, on rank 0, "seeds: SUBJECT RANKS" for seeds_differ_across_ranks.
check() is not quiet: rank 0 alone must print the merged findings (the test counts them on stderr)."""
import sys

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import baton.torch

mode = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(1234 + (rank if mode == "bad" else 0))
norm = torch.nn.BatchNorm1d(8) if mode == "bad" else torch.nn.LayerNorm(8)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), norm, torch.nn.Linear(8, 2))
model = torch.nn.parallel.DistributedDataParallel(model)
data = TensorDataset(torch.randn(64, 8))
sampler = DistributedSampler(data) if mode == "good" else None
loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=1, persistent_workers=True)
found = baton.torch.check(model=model, loader=loader, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
print(f"rank {rank}: {','.join(sorted(f['rule'] for f in found))}", flush=True)
for f in found:
    if f["rule"] == "seeds_differ_across_ranks" and rank == 0:
        print(f"seeds: {f['subject']} {f['ranks']}", flush=True)
dist.destroy_process_group()
