#!/usr/bin/env python3
"""The wheel of `pip install .` against the bare binary: its size, and the start-up of `baton --version`
run from the environment the wheel was installed into against the portable binary it was made from,
alternating, in one run (target: <= 2 ms more). The wheel is built offline with the in-tree backend from
BATON_PORTABLE (default build/src/cli/baton-portable) into a fresh virtual environment, removed at the end.

usage: python3 bench/wheel_startup.py [RUNS]      (default 300 runs of each)
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORTABLE = os.path.abspath(os.environ.get("BATON_PORTABLE", os.path.join(ROOT, "build", "src", "cli", "baton-portable")))
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 300


def started_ms(binary):
    t = time.perf_counter()
    subprocess.run([binary, "--version"], stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) * 1000


def main():
    tmp = tempfile.mkdtemp(prefix="baton-wheel-bench-")
    try:
        dist = os.path.join(tmp, "dist")
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps", "--quiet", "-w", dist, ROOT],
                       check=True, env=dict(os.environ, BATON_PORTABLE=PORTABLE))
        wheel = os.path.join(dist, os.listdir(dist)[0])
        venv = os.path.join(tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-index", "--quiet", wheel],
                       check=True)
        installed = os.path.join(venv, "bin", "baton")
        bare, wheeled = [], []
        for _ in range(RUNS):
            bare.append(started_ms(PORTABLE))
            wheeled.append(started_ms(installed))
        b, w = statistics.median(bare), statistics.median(wheeled)
        print("wheel: %s, %.1f MB (the binary in it %.1f MB stripped, %.1f MB as built)" % (
            os.path.basename(wheel), os.path.getsize(wheel) / 1e6, os.path.getsize(installed) / 1e6,
            os.path.getsize(PORTABLE) / 1e6))
        print("baton --version over %d runs each, alternating, medians:" % RUNS)
        print("  the portable binary:         %.2f ms" % b)
        print("  baton from the wheel's venv: %.2f ms" % w)
        print("  difference: %+.2f ms (target <= 2 ms)" % (w - b))
        print("TARGET MET" if w - b <= 2 else "TARGET MISSED")
        return 0 if w - b <= 2 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
