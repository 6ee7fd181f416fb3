#!/usr/bin/env python3
"""`baton stacks` against the manual way, side by side in one run: the stacks of NPROC ranks (default 8)
of a hung `baton launch` (gloo on the CPU; rank NPROC-1 called barrier() where the others wait in
all_reduce()), and what the stack handler costs a healthy job.

Measured, ROUNDS times each (default 5), alternating:
- baton: `baton stacks --pid LAUNCHER`: every rank signalled, each dump read, the main threads grouped;
- gdb: `gdb -p PID -batch -ex "thread apply all bt"` for each rank in turn, what one does without a tool
  (Debian has no py-spy; gdb shows the C stacks, where the Python lines are not even visible).
Target: baton's median at most 2 s for 8 ranks (the issue's), and the ratio printed.

The handler's cost to a healthy job: a Python start (`python3 -c pass`, ROUNDS x 10 each) with the shim on
PYTHONPATH against one without; the per-step cost of the hook is bench/hook_overhead.sh's (the shim adds no
per-step work: faulthandler's handler runs only on the signal).

usage: bench/stacks_vs_gdb.py [ROUNDS] [NPROC]   (after scripts/test.sh: python3-torch; gdb is installed
here when missing). The baton measured is build/src/cli/baton-portable, or $BATON. Exit status 0 when the
target is met.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
NPROC = int(sys.argv[2]) if len(sys.argv) > 2 else 8
BATON = os.environ.get("BATON") or next(
    (p for p in (os.path.join(ROOT, "build/src/cli/baton-portable"), os.path.join(ROOT, "build/src/cli/baton"))
     if os.path.exists(p)), "baton")
PYTHON = "/usr/bin/python3"
RANK_SCRIPT = """import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(4)
if dist.get_rank() == dist.get_world_size() - 1:
    dist.barrier()
else:
    dist.all_reduce(t)
"""


def timed(cmd):
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    return time.monotonic() - t0, r


def main():
    if not shutil.which("gdb"):
        subprocess.run([os.path.join(ROOT, "scripts/apt-install.sh"), "gdb"], check=True)
    tmp = tempfile.mkdtemp(prefix="baton-bench-stacks-")
    script = os.path.join(tmp, "rank.py")
    with open(script, "w") as f:
        f.write(RANK_SCRIPT)
    launcher = subprocess.Popen([BATON, "launch", "--no-db", "--quiet", "--python", PYTHON, "--nproc-per-node",
                                 str(NPROC), "--log-dir", os.path.join(tmp, "logs"), "--hang-seconds", "7d", script],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(tmp, "launch.log"), "w"))
    try:
        deadline = time.monotonic() + 180
        while True:  # every rank at its collective
            _, r = timed([BATON, "stacks", "--pid", str(launcher.pid), "--json"])
            doc = json.loads(r.stdout) if r.returncode == 0 else {"groups": []}
            if sorted(len(g["ranks"]) for g in doc["groups"]) == [1, NPROC - 1]:
                pids = [p["pid"] for p in doc["processes"]]
                break
            if time.monotonic() > deadline:
                with open(os.path.join(tmp, "launch.log")) as log:
                    sys.exit("the ranks did not reach their collectives: " + r.stdout + r.stderr + log.read())
            time.sleep(0.5)
        baton_s, gdb_s = [], []
        for _ in range(ROUNDS):
            s, r = timed([BATON, "stacks", "--pid", str(launcher.pid)])
            assert r.returncode == 0 and f"{NPROC} of {NPROC} processes answered" in r.stdout, r.stdout + r.stderr
            baton_s.append(s)
            t0 = time.monotonic()
            for pid in pids:
                _, g = timed(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"])
                assert "Thread" in g.stdout, g.stdout + g.stderr
            gdb_s.append(time.monotonic() - t0)
        # The shim's cost at a Python start.
        shim = os.path.join(tmp, "logs")
        run_dir = next(os.path.join(shim, d) for d in os.listdir(shim))
        env_shim = dict(os.environ, PYTHONPATH=os.path.join(run_dir, "python"),
                        BATON_STACKS_DIR=os.path.join(tmp, "startup-stacks"), BATON_STACKS_SIGNAL="59")
        os.makedirs(env_shim["BATON_STACKS_DIR"])
        env_plain = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
        plain_s, shim_s = [], []
        for _ in range(ROUNDS * 10):
            for env, out in ((env_plain, plain_s), (env_shim, shim_s)):
                t0 = time.monotonic()
                subprocess.run([PYTHON, "-c", "pass"], env=env, check=True)
                out.append(time.monotonic() - t0)
    finally:
        launcher.terminate()
        launcher.wait(60)
        shutil.rmtree(tmp, ignore_errors=True)
    b, g = statistics.median(baton_s), statistics.median(gdb_s)
    p, s = statistics.median(plain_s), statistics.median(shim_s)
    print(f"the stacks of {NPROC} ranks of a hung launch, {ROUNDS} rounds each, medians (baton: {BATON})")
    print(f"baton stacks (all ranks, grouped)     {b * 1000:8.0f} ms")
    print(f"gdb -p, each rank in turn (C stacks)  {g * 1000:8.0f} ms")
    print(f"baton / gdb: {b / g:.3f}; baton {b:.2f} s (target <= 2 s)")
    print(f"a Python start: {p * 1000:.1f} ms without the stack handler, {s * 1000:.1f} ms with it "
          f"(+{(s - p) * 1000:.1f} ms, once per process)")
    sys.exit(0 if b <= 2.0 else 1)


if __name__ == "__main__":
    main()
