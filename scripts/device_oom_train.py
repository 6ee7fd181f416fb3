#!/usr/bin/env python3
"""A training loop for scripts/device-check.sh (issue 34) on a real GPU:

  device_oom_train.py grow OUT_JSON    the batch doubles every step until CUDA runs out of memory; at
                                       the error the script writes what PyTorch itself says of its memory
                                       (memory_stats, memory_summary) to OUT_JSON, then lets the error end
                                       it, so `baton run` explains the same failure from the hook's capture
  device_oom_train.py steady STEPS     STEPS steps at a fixed batch; prints the median step time (the cost
                                       of --memory-history is the difference with and without it)

The model: 16 blocks of Linear(4096, 4096) + GELU in float32 with AdamW, activations dominating as the
batch grows. With the hook (python/ on PYTHONPATH) under `baton run`, steps go through baton.torch.watch.
"""
import json
import statistics
import sys
import time

import torch

try:
    import baton.torch as baton_torch
except ImportError:
    baton_torch = None

WIDTH, BLOCKS = 4096, 16


def model_and_optimizer():
    layers = []
    for _ in range(BLOCKS):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).cuda()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4)


def batches(sizes):
    for n in sizes:
        yield torch.randn(n, WIDTH, device="cuda")


def watched(it):
    return baton_torch.watch(it) if baton_torch else it


def grow(out_path):
    model, opt = model_and_optimizer()
    sizes = [256 * 2 ** i for i in range(30)]
    try:
        for x in watched(batches(sizes)):
            loss = model(x).float().pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            print(f"batch {x.shape[0]}: peak {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB", flush=True)
    except torch.cuda.OutOfMemoryError as e:
        stats = torch.cuda.memory_stats()
        with open(out_path, "w") as f:
            json.dump({"allocated_bytes": stats.get("allocated_bytes.all.current", 0),
                       "reserved_bytes": stats.get("reserved_bytes.all.current", 0),
                       "parameters_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
                       "summary": torch.cuda.memory_summary(), "message": str(e)}, f)
        raise


def steady(steps):
    model, opt = model_and_optimizer()
    times = []
    for x in watched(batches([1024] * steps)):
        t = time.perf_counter()
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    print(f"median step {statistics.median(times[5:]) * 1e3:.3f} ms over {len(times) - 5} steps")


if __name__ == "__main__":
    if sys.argv[1] == "grow":
        grow(sys.argv[2])
    else:
        steady(int(sys.argv[2]))
