"""Ranks that record their pids (and a child's, like a DataLoader worker) in OUT, then wait;
rank 2 fails with exit status 7 after writing to stderr. With IGNORE_TERM=R, rank R ignores SIGTERM.
With NCCL_LINE=R, rank R first prints an NCCL warning on its stdout (as NCCL does), and rank 2 fails
after it."""
import os
import signal
import subprocess
import sys
import time

out = sys.argv[1]
rank = int(os.environ["RANK"])
if os.environ.get("IGNORE_TERM") == str(rank):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "120"])  # stays in the rank's process group
with open(os.path.join(out, f"pids.{rank}"), "w") as f:
    f.write(f"{os.getpid()} {child.pid}\n")
nccl_rank = os.environ.get("NCCL_LINE")
if nccl_rank == str(rank):
    print(f"host:{os.getpid()}:{os.getpid() + 1} [0] NCCL WARN NET/Socket : peer 127.0.0.1<41234> shut down",
          flush=True)
    with open(os.path.join(out, "nccl_said"), "w") as f:
        f.write("1")
if rank == 2:
    # Fail once every rank has written its pids, so the test knows every process to look for.
    world = int(os.environ["WORLD_SIZE"])
    while len([n for n in os.listdir(out) if n.startswith("pids.")]) < world:
        time.sleep(0.01)
    while nccl_rank and not os.path.exists(os.path.join(out, "nccl_said")):
        time.sleep(0.01)
    if nccl_rank:
        time.sleep(0.3)  # the warning is read first
        print("[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15, OpType=ALLREDUCE) ran "
              "for 600000 milliseconds before timing out.", file=sys.stderr)
    for i in range(30):
        print(f"rank 2 stderr line {i}", file=sys.stderr)
    print("ValueError: rank 2 gave up", file=sys.stderr)
    with open(os.path.join(out, "failed_at"), "w") as f:
        f.write(repr(time.time()))
    sys.exit(7)
time.sleep(120)
