#!/usr/bin/env python3
"""`baton launch` against Debian's torchrun, side by side in one run: the start-up overhead of a
launcher, for NPROC ranks (default 4) of a script that exits at once.

Measured per start, ROUNDS times each (default 5), the two launchers alternating:
- launch-to-all-ranks-running: from just before the launcher is started to the moment the last of
  its ranks runs its first line of Python (each rank writes time.time() first thing);
- wall: from the same start to the launcher's exit.
Target: baton's median launch-to-all-ranks-running at most half of torchrun's.

torchrun is Debian's (python3-torch 1.13 on Python 3.11), given `-r 1 -t 1 --log_dir` because its
defaults fail there ("0" no longer maps to Std.NONE on Python 3.11); baton gets --log-dir too, and
--no-db (torchrun records nothing either). Both use /usr/bin/python3.

usage: bench/launch_vs_torchrun.py [ROUNDS] [NPROC]   (after scripts/test.sh: python3-torch)
The baton measured is build/src/cli/baton-portable (what `cmake --install` installs), or $BATON.
Prints the figures and the ratio; exit status 0 when the target is met.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
NPROC = int(sys.argv[2]) if len(sys.argv) > 2 else 4
BATON = os.environ.get("BATON") or next(
    (p for p in (os.path.join(ROOT, "build/src/cli/baton-portable"), os.path.join(ROOT, "build/src/cli/baton"))
     if os.path.exists(p)), "baton")
TORCHRUN = shutil.which("torchrun") or "/usr/bin/torchrun"
PYTHON = "/usr/bin/python3"
RANK_SCRIPT = """import os, sys, time
t = time.time()
with open(os.path.join(sys.argv[1], os.environ["RANK"]), "w") as f:
    f.write(repr(t))
"""


def one(kind, work):
    out = tempfile.mkdtemp(dir=work)
    logs = tempfile.mkdtemp(dir=work)
    script = os.path.join(work, "rank.py")
    if kind == "baton":
        cmd = [BATON, "launch", "--no-db", "--python", PYTHON, "--nproc-per-node", str(NPROC), "--log-dir", logs,
               script, out]
    else:
        cmd = [TORCHRUN, "--nproc_per_node", str(NPROC), "--log_dir", logs, "-r", "1", "-t", "1", script, out]
    t0 = time.time()
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    wall = time.time() - t0
    if r.returncode != 0:
        raise SystemExit(f"{kind} failed ({r.returncode}): {r.stderr[-2000:]}")
    starts = []
    for rank in range(NPROC):
        with open(os.path.join(out, str(rank))) as f:
            starts.append(float(f.read()))
    return max(starts) - t0, wall


def main():
    if not os.path.exists(TORCHRUN):
        raise SystemExit("torchrun not found: scripts/test.sh installs python3-torch")
    work = tempfile.mkdtemp(prefix="baton-bench-launch-")
    try:
        with open(os.path.join(work, "rank.py"), "w") as f:
            f.write(RANK_SCRIPT)
        figures = {"baton": [], "torchrun": []}
        one("baton", work)  # warm the page cache for both before measuring
        one("torchrun", work)
        for _ in range(ROUNDS):
            for kind in ("baton", "torchrun"):
                figures[kind].append(one(kind, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{NPROC} ranks of a script that exits at once, {ROUNDS} starts each, medians "
          f"(baton: {BATON}; torchrun: {TORCHRUN})")
    print(f"{'launcher':<10} {'all ranks running':>18} {'wall':>8}")
    med = {}
    for kind, runs in figures.items():
        med[kind] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
        print(f"{kind:<10} {med[kind][0] * 1000:>15.0f} ms {med[kind][1] * 1000:>5.0f} ms")
    ratio = med["baton"][0] / med["torchrun"][0]
    print(f"baton / torchrun, launch-to-all-ranks-running: {ratio:.2f} (target <= 0.50); "
          f"wall: {med['baton'][1] / med['torchrun'][1]:.2f}")
    return 0 if ratio <= 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
