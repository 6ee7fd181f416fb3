"""A data-parallel training loop under gloo whose every step does the same fixed work (a 20 ms
pause, standing for the forward and backward pass, then an all-reduce of a small gradient), with
its loader watched by baton's Python hook: each rank's throughput is the same at every world size,
so weak scaling is near linear. Runs until the launcher ends it (or for SECONDS, when given)."""
import os
import sys
import time

import torch
import torch.distributed as dist

import baton.torch

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
end = time.time() + float(sys.argv[1]) if len(sys.argv) > 1 else float("inf")
batch = torch.zeros(32, 8)  # 32 samples a step
grad = torch.ones(1024)


def batches():
    while time.time() < end:
        yield batch


for step, x in enumerate(baton.torch.watch(batches())):
    time.sleep(0.02)
    dist.all_reduce(grad)
    if step % 10 == 0:
        print(f"step {step} rank {rank} samples/s: {32 / 0.02:.1f}", flush=True)
dist.destroy_process_group()
