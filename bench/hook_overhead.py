#!/usr/bin/env python3
"""The Python hook's cost per step: the same loop of 10 ms steps with and without
baton.torch.watch, alternating in rounds (so drift hits both alike), under `baton run` (so the
events really go out). Prints the overhead per step and as a share of the 10 ms step.

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


def main():
    steps, rounds = int(sys.argv[1]), int(sys.argv[2])
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


if __name__ == "__main__":
    main()
