#!/usr/bin/env python3
"""What `baton run --profile`'s window costs the training, and where (issue 33: its cost stays in the
window). The same loop of 10 ms steps through baton.torch.watch runs under `baton run` twice, without
and with `--profile` (the window after WARMUP steps, 5 steps long), ROUNDS times alternating; each run
measures its own steps (from one batch asked to the next) and reports the median step before the
window, in it, and after it. Steps outside the window must match the run without a window.

usage: bench/profile_window_cost.py [STEPS] [WARMUP] [ROUNDS]   (defaults 300 100 3; after
scripts/test.sh: python3-torch). The baton measured is build/src/cli/baton, or $BATON. Exit status 0
when the steps outside the window are within 2 % of the run without one.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
WARMUP = int(sys.argv[2]) if len(sys.argv) > 2 else 100
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
BATON = os.environ.get("BATON", os.path.join(ROOT, "build/src/cli/baton"))
WINDOW = 5

LOOP = r"""
import json, sys, time, torch
import baton.torch
times, last = [], None
for _ in baton.torch.watch([torch.zeros(32, 8) for _ in range(int(sys.argv[1]))]):
    now = time.perf_counter()
    if last is not None:
        times.append(now - last)
    last = now
    deadline = now + 0.010
    while time.perf_counter() < deadline:
        pass
json.dump(times, open(sys.argv[2], "w"))
"""


def one(profile, d):
    out = os.path.join(d, "times.json")
    with open(os.path.join(d, "baton.toml"), "w") as f:
        f.write(f"[profile]\nwarmup = {WARMUP}\nsteps = {WINDOW}\n")
    argv = [BATON, "--config", os.path.join(d, "baton.toml"), "run", "--no-db", "--quiet", "--no-gpus"]
    if profile:
        argv.append("--profile")
    argv += ["--", "/usr/bin/python3", "-c", LOOP, str(STEPS), out]
    p = subprocess.run(argv, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")), capture_output=True,
                       text=True)
    if p.returncode != 0:
        sys.exit(f"baton run failed: {p.stderr}")
    if profile and "baton profile: the window of" not in p.stderr:
        sys.exit(f"no window was recorded: {p.stderr}")
    with open(out) as f:
        return json.load(f)


def main():
    # times[k] is step k's duration (from its batch to the next); the window's steps are
    # WARMUP .. WARMUP + WINDOW (its warm-up step and WINDOW recorded), +1 for the stop.
    first, last = WARMUP - 1, WARMUP + WINDOW + 1
    before, inside, after, plain = [], [], [], []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(ROUNDS):
            t = one(False, d)
            plain += t[10:first] + t[last + 1:]
            t = one(True, d)
            before += t[10:first]
            inside += t[first:last + 1]
            after += t[last + 1:]
    ms = lambda v: statistics.median(v) * 1e3  # noqa: E731
    print(f"steps of 10 ms, {STEPS} a run, window after {WARMUP} steps, {ROUNDS} rounds; medians (baton: {BATON})")
    print(f"without --profile                 {ms(plain):8.3f} ms")
    print(f"with --profile, before the window {ms(before):8.3f} ms")
    print(f"with --profile, in the window     {ms(inside):8.3f} ms  (max {max(inside) * 1e3:.1f} ms: the profiler's start and export)")
    print(f"with --profile, after the window  {ms(after):8.3f} ms")
    worst = max(abs(ms(before) - ms(plain)), abs(ms(after) - ms(plain))) / ms(plain)
    print(f"outside the window: {100 * worst:.2f} % from the run without one (target <= 2 %)")
    return 0 if worst <= 0.02 else 1


if __name__ == "__main__":
    sys.exit(main())
