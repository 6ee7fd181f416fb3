"""A small model trained with DistributedDataParallel over gloo: each rank sees its own shard of a
fixed dataset; at the end every rank writes its parameters to OUT/params.RANK (they must agree)."""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

out = sys.argv[1]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)  # the same initial model everywhere (DDP broadcasts rank 0's anyway)
model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(1234)
x = torch.randn(64 * world, 8, generator=g)
y = x.sum(dim=1, keepdim=True)
for step in range(20):
    xs = x[rank::world][step % 4 * 16:(step % 4 + 1) * 16]
    ys = y[rank::world][step % 4 * 16:(step % 4 + 1) * 16]
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(xs), ys)
    loss.backward()
    opt.step()
params = torch.cat([p.detach().flatten() for p in model.parameters()])
with open(os.path.join(out, f"params.{rank}"), "w") as f:
    f.write(" ".join(f"{v:.9g}" for v in params.tolist()))
print(f"rank {rank} of {world} (node {os.environ['GROUP_RANK']}): loss {loss.item():.4f}")
dist.destroy_process_group()
