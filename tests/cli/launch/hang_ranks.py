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
--flight-recorder: each rank keeps a Flight Recorder of its collectives and answers its pipe as
          ProcessGroupNCCL does (there is no NCCL here; see FlightRecorder).
The line numbers of the marked lines are what the tests expect in the verdict."""
import argparse
import os
import sys
import threading
import time

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("mode")
ap.add_argument("--hook", action="store_true")
ap.add_argument("--ready")
ap.add_argument("--seconds", type=float, default=30)
ap.add_argument("--flight-recorder", action="store_true")
args = ap.parse_args()
if args.hook:
    import baton.torch


class FlightRecorder:
    """Stands in for ProcessGroupNCCL's Flight Recorder (PyTorch 2.3+), which gloo on Debian's torch
    1.13 lacks: it records this rank's collectives (sequence number, op, sizes, state, the caller's
    line) and answers the pipe as PyTorch does. With TORCH_NCCL_TRACE_BUFFER_SIZE > 0 and
    TORCH_NCCL_DEBUG_INFO_PIPE_FILE set, it makes the FIFO <stem><rank>.pipe, opens it O_RDONLY |
    O_NONBLOCK and polls it every second; anything read makes a dump, pickled in the documented layout,
    written in place to <TORCH_NCCL_DEBUG_INFO_TEMP_FILE><rank>."""

    def __init__(self, rank, world):
        sys.path.insert(0, os.environ["BATON_FR_FIXTURES"])
        import make_dumps
        self.make_dumps = make_dumps
        self.rank, self.world, self.calls = rank, world, []
        self.lock = threading.Lock()
        stem = os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "")
        if not stem or int(os.environ.get("TORCH_NCCL_TRACE_BUFFER_SIZE", "0")) <= 0:
            return
        pipe = f"{stem}{rank}.pipe"
        if os.path.exists(pipe):
            os.unlink(pipe)
        os.mkfifo(pipe, 0o666)
        self.fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
        threading.Thread(target=self.poll, daemon=True).start()

    def wrap(self, op, fn):
        """`fn` (dist.all_reduce, ...) recorded: the script's own calls stay as they are."""

        def recorded(*a, **kw):
            caller = sys._getframe(1)
            with self.lock:
                entry = [len(self.calls) + 1, op, [[4]], "Float", "started", caller.f_code.co_filename,
                         caller.f_lineno, caller.f_code.co_name]
                self.calls.append(entry)
            out = fn(*a, **kw)
            with self.lock:
                entry[4] = "completed"
            return out

        return recorded

    def poll(self):
        while True:
            time.sleep(1)
            try:
                asked = os.read(self.fd, 128)
            except BlockingIOError:
                continue
            if asked:
                with self.lock:
                    d = self.make_dumps.dump(self.rank, self.world, [list(c) for c in self.calls])
                import pickle
                with open(os.environ["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] + str(self.rank), "wb") as f:
                    f.write(pickle.dumps(d, protocol=2))


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
    if args.flight_recorder:
        recorder = FlightRecorder(rank, dist.get_world_size())
        dist.all_reduce = recorder.wrap("all_reduce", dist.all_reduce)
        dist.barrier = recorder.wrap("barrier", dist.barrier)
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
        # Gloo's threads are joined here, not in the interpreter's exit, where one rank in 700 CI
        # runs aborted ("terminate called without an active exception", exit 134).
        dist.destroy_process_group()
        return
    for _ in range(5):
        train_step(t)
        time.sleep(0.05)
    if rank == 2:
        evaluate(rank)
    train_step(t)


main()
