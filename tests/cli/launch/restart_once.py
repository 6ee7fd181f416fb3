"""Fails on its first attempt (rank 1 exits 3), succeeds on the next; prints the restart count."""
import os
import sys

count = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
print(f"rank {os.environ['RANK']} restart count {count} of max {os.environ['TORCHELASTIC_MAX_RESTARTS']}")
if count == 0 and os.environ["RANK"] == "1":
    print("first attempt fails", file=sys.stderr)
    sys.exit(3)
