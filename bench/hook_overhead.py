#!/usr/bin/env python3
"""The Python hook's cost per step: the same loop of 10 ms steps with and without
baton.torch.watch, alternating in rounds (so drift hits both alike), under `baton run` (so the
events really go out). Prints the overhead per step and as a share of the 10 ms step; then the
cost of the CUDA allocator's figures each step adds (issue 34: at most 0.5 % of a 10 ms step):
with CUDA, the real allocator's (memory_stats_as_nested_dict and reset_peak_memory_stats); without,
a stand-in that builds a dictionary of the real one's shape each step (its Python objects are
what a step pays for besides the C++ counters, which only a GPU measures: scripts/device-check.sh).
Then the automatic hook's cost (steps with no code change, baton/_auto.py, installed by the shim
`baton run` puts on PYTHONPATH): a loop over a real DataLoader that steps an optimizer each batch, with
the patched DataLoader iterator and optimizer step against PyTorch's own, alternating in rounds.

  bench/hook_overhead.py STEPS ROUNDS     (run by bench/hook_overhead.sh)
"""
import statistics
import sys
import time

import torch  # noqa: F401  (the hook imports it; imported here so both sides start warm)

import baton.torch
from baton import _events

STEP_S = 0.010


def loop(batches, watched):
    it = baton.torch.watch(batches) if watched else batches
    start = time.perf_counter()
    for _ in it:
        deadline = time.perf_counter() + STEP_S  # the step's work: exactly 10 ms from its start
        while time.perf_counter() < deadline:
            pass
    return (time.perf_counter() - start) / len(batches)


# The nested dictionary torch.cuda.memory_stats_as_nested_dict returns (PyTorch 2.x): these statistics,
# each per pool and per metric, and the counters.
_STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes", "active_bytes",
          "inactive_split_bytes", "requested_bytes", "oversize_allocations", "oversize_segments")
_COUNTERS = ("num_alloc_retries", "num_ooms", "max_split_size", "num_sync_all_streams", "num_device_alloc",
             "num_device_free")


def _stand_in_stats(device=None):
    out = {name: {pool: {m: 1 << 30 for m in ("current", "peak", "allocated", "freed")}
                  for pool in ("all", "large_pool", "small_pool")} for name in _STATS}
    out.update({c: 0 for c in _COUNTERS})
    return out


def allocator():
    """'real CUDA' after initialising it, or 'stand-in' after putting the stand-in in torch.cuda's place."""
    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")
        return "real CUDA"
    torch.cuda.is_available = lambda: True
    torch.cuda.is_initialized = lambda: True
    torch.cuda.current_device = lambda: 0
    torch.cuda.memory_stats_as_nested_dict = _stand_in_stats
    torch.cuda.reset_peak_memory_stats = lambda device=None: None

    class Props:
        total_memory = 80 << 30

    torch.cuda.get_device_properties = lambda d: Props()
    return "stand-in"


def auto_hook_cost(steps, rounds):
    """The automatic hook's cost per step, or None when the shim did not install it (the rounds
    swap PyTorch's own functions back in for the plain side, and lift the explicit hook's precedence
    for the automatic side: this bench's own business)."""
    from baton import _auto
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import _BaseDataLoaderIter
    if not _auto._installed:
        return None
    param = torch.nn.Parameter(torch.zeros(8))
    opt = torch.optim.SGD([param], lr=0.0)  # wraps SGD.step on PyTorch 1.13 (the global hook on 2.x)
    cls = type(opt)
    patched = {(_BaseDataLoaderIter, "__next__"): _BaseDataLoaderIter.__next__}
    if "step" in cls.__dict__ and hasattr(cls.step, "__wrapped__"):
        patched[(cls, "step")] = cls.step
    loader = DataLoader([torch.zeros(8) for _ in range(steps)], batch_size=1)
    clock = baton.torch._steps

    def run(auto):
        for (owner, name), f in patched.items():
            setattr(owner, name, f if auto else f.__wrapped__)
        clock.explicit = not auto  # the plain side: on 2.x the global hook is then a no-op
        start = time.perf_counter()
        for _ in loader:
            deadline = time.perf_counter() + STEP_S
            while time.perf_counter() < deadline:
                pass
            opt.step()
        return (time.perf_counter() - start) / steps

    run(True)
    plain, auto = [], []
    for _ in range(rounds):
        plain.append(run(False))
        auto.append(run(True))
    clock.explicit = True
    return statistics.median(plain), statistics.median(auto)


def main():
    steps, rounds = int(sys.argv[1]), int(sys.argv[2])
    automatic = auto_hook_cost(steps, rounds)
    batches = [torch.zeros(32, 8) for _ in range(steps)]
    loop(batches[:50], True)  # warm-up
    plain, watched = [], []
    for _ in range(rounds):
        plain.append(loop(batches, False))
        watched.append(loop(batches, True))
    p, w = statistics.median(plain), statistics.median(watched)
    overhead = w - p
    share = 100.0 * overhead / STEP_S
    s = _events.sender()
    print(f"steps of 10 ms, {rounds} rounds of {steps}: plain {p * 1e3:.4f} ms, watched {w * 1e3:.4f} ms")
    print(f"hook overhead {overhead * 1e6:.1f} us per step = {share:.2f} % of a 10 ms step "
          f"(target <= 1 %: {'met' if share <= 1.0 else 'NOT met'}); events sent {s.sent}, dropped {s.dropped}")
    if not s.connected:
        print("(not under baton run: no events were sent; run bench/hook_overhead.sh)")
        return
    if automatic is None:
        print("automatic hook: not installed (run under baton run without --no-auto-hook)")
    else:
        p, a = automatic
        share = 100.0 * (a - p) / STEP_S
        print(f"automatic hook (a DataLoader and an optimizer step per step, no code change): plain {p * 1e3:.4f} ms, "
              f"hooked {a * 1e3:.4f} ms: {(a - p) * 1e6:.1f} us per step = {share:.2f} % of a 10 ms step "
              f"(target <= 1 %: {'met' if share <= 1.0 else 'NOT met'})")
    # The allocator's figures: the watched loop again, with CUDA (or its stand-in), against without.
    without = []
    for _ in range(rounds):
        without.append(loop(batches, True))
    kind = allocator()
    with_figures = []
    for _ in range(rounds):
        with_figures.append(loop(batches, True))
    a, b = statistics.median(without), statistics.median(with_figures)
    figures = b - a
    share = 100.0 * figures / STEP_S
    print(f"allocator figures ({kind}): {figures * 1e6:.1f} us per step = {share:.2f} % of a 10 ms step "
          f"(target <= 0.5 %: {'met' if share <= 0.5 else 'NOT met'})")


if __name__ == "__main__":
    main()
