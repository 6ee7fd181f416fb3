"""Ranks stepping through a watched loader for SECONDS; rank 1's steps take twice as long as the
others' (a straggler). No collective: each rank's pace is its own."""
import os
import sys
import time

import baton.torch

seconds = float(sys.argv[1])
rank = int(os.environ["RANK"])
step = 0.04 if rank == 1 else 0.02
end = time.time() + seconds
for _ in baton.torch.watch(iter(lambda: time.time() < end, False)):
    time.sleep(step)
print(f"rank {rank} done")
