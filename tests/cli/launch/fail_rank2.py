"""Ranks that record their pids (and a child's, like a DataLoader worker) in OUT, then wait;
rank 2 fails with exit status 7 after writing to stderr. With IGNORE_TERM=R, rank R ignores SIGTERM."""
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
if rank == 2:
    # Fail once every rank has written its pids, so the test knows every process to look for.
    world = int(os.environ["WORLD_SIZE"])
    while len([n for n in os.listdir(out) if n.startswith("pids.")]) < world:
        time.sleep(0.01)
    for i in range(30):
        print(f"rank 2 stderr line {i}", file=sys.stderr)
    print("ValueError: rank 2 gave up", file=sys.stderr)
    with open(os.path.join(out, "failed_at"), "w") as f:
        f.write(repr(time.time()))
    sys.exit(7)
time.sleep(120)
