"""A rank of the launch tests: all_reduce over gloo (the sum checked), then its environment saved
as OUT/RANK.json for the test to compare between launchers."""
import json
import os
import sys

import torch
import torch.distributed as dist

out = sys.argv[1]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2, (t.item(), world)
dist.barrier()
dist.destroy_process_group()
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, f"{rank}.json"), "w") as f:
    json.dump({"env": dict(os.environ), "sum": t.item(), "argv": sys.argv, "unbuffered": not sys.stdout.line_buffering
               and os.environ.get("PYTHONUNBUFFERED") == "1"}, f)
print(f"rank {rank} of {world}: sum {t.item():.0f}")
