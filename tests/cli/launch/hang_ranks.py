"""A rank of the hang tests: a few training steps over gloo (an all_reduce each), then rank 2 does
what MODE says while the others go on to the next all_reduce and wait for it.

Usage: hang_ranks.py MODE [--hook] [--ready FILE] [--seconds S]
  skip    rank 2 calls barrier() where the others call all_reduce() (a desync)
  spin    rank 2 loops in Python forever
  pipe    rank 2 blocks reading a pipe nobody writes
  exit    rank 2 exits with status 0, a child of it holding its connections
  freeze  rank 2 writes FILE (its pid) and idles: the test freezes it (state D)
  eval    no hang: every rank evaluates for S seconds with no step, after a first step of S/2 seconds of
          compute and a DataLoader whose worker takes S/2 seconds to start; silent all along
--hook: every step is marked with baton.torch.step() (the hook's steps reach the launcher).
The line numbers of the marked lines are what the tests expect in the verdict."""
import argparse
import os
import time

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("mode")
ap.add_argument("--hook", action="store_true")
ap.add_argument("--ready")
ap.add_argument("--seconds", type=float, default=30)
args = ap.parse_args()
if args.hook:
    import baton.torch


def train_step(t):
    dist.all_reduce(t)  # ALL_REDUCE_LINE
    if args.hook:
        baton.torch.step()


def evaluate(rank):
    if args.mode == "skip":
        dist.barrier()  # BARRIER_LINE
    elif args.mode == "spin":
        x = 0
        while True:
            x += 1  # SPIN_LINE
    elif args.mode == "pipe":
        r, _ = os.pipe()
        os.read(r, 1)  # PIPE_LINE
    elif args.mode == "exit":
        # A child that keeps the rank's connections open (as a DataLoader worker left behind would):
        # with gloo the others then wait, as NCCL's ranks wait for a dead peer, instead of failing.
        if os.fork() == 0:
            time.sleep(3600)
        os._exit(0)
    elif args.mode == "freeze":
        with open(args.ready + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(args.ready + ".tmp", args.ready)
        while True:
            time.sleep(0.01)


def busy(seconds):
    """Compute on the CPU for `seconds` (a compile, an autotuning, an evaluation): stacks move, CPU works."""
    end = time.time() + seconds
    a = torch.rand(64, 64)
    while time.time() < end:
        a = (a @ a).softmax(dim=1)


class SlowStart(torch.utils.data.Dataset):
    """A dataset whose worker takes a while for its first item (a DataLoader starting up)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 0:
            busy(self.seconds)
        return torch.ones(4)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    t = torch.ones(4)
    if args.mode == "eval":
        loader = torch.utils.data.DataLoader(SlowStart(args.seconds / 2), num_workers=1, batch_size=None)
        for i, _ in enumerate(loader):
            if i == 0:
                busy(args.seconds / 2)  # a slow first step on every rank (a compile)
            train_step(t)
        busy(args.seconds)  # an evaluation on every rank: no step for `seconds`
        for _ in range(3):
            train_step(t)
        dist.barrier()
        return
    for _ in range(5):
        train_step(t)
        time.sleep(0.05)
    if rank == 2:
        evaluate(rank)
    train_step(t)


main()
