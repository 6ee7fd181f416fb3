"""The GPU machine's check of `baton bench h2d` (issue 16): PyTorch's own pinned host-to-device and
device-to-host copy bandwidth on each GPU, against the figures baton measured (its JSON on stdin).
They must agree within 10 %.

usage: baton bench h2d --json --no-db | python3 scripts/device_bench_check.py"""
import json
import sys

import torch


def torch_copy_rate(index, direction, size=1 << 30, reps=10):
    """Bytes per second of pinned copies of `size` bytes, best of three timings with CUDA events."""
    host = torch.empty(size, dtype=torch.uint8).pin_memory()
    dev = torch.empty(size, dtype=torch.uint8, device=f"cuda:{index}")
    src, dst = (host, dev) if direction == "h2d" else (dev, host)
    dst.copy_(src, non_blocking=True)  # warm-up
    torch.cuda.synchronize(index)
    best = 0.0
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.device(index):
            start.record()
            for _ in range(reps):
                dst.copy_(src, non_blocking=True)
            end.record()
        end.synchronize()
        best = max(best, size * reps / (start.elapsed_time(end) / 1000))
    return best


def main():
    report = json.load(sys.stdin)
    links = {l["link"]: l for l in report["links"]}
    ok = True
    # CUDA_DEVICE_ORDER=PCI_BUS_ID (set by the caller) makes torch's indices baton's.
    for index in range(torch.cuda.device_count()):
        for direction in ("h2d", "d2h"):
            link = links.get(f"{direction} gpu{index} pinned")
            if not link:
                print(f"gpu{index} {direction}: baton measured nothing")
                ok = False
                continue
            theirs = torch_copy_rate(index, direction)
            ratio = link["measured"] / theirs
            agree = abs(ratio - 1) <= 0.10
            ok = ok and agree
            print(f"gpu{index} {direction} pinned: baton {link['measured'] / 1e9:.1f} GB/s, PyTorch {theirs / 1e9:.1f} "
                  f"GB/s, ratio {ratio:.3f} ({'agree' if agree else 'DISAGREE'} within 10 %); "
                  f"peak {link.get('peak', 0) / 1e9:.1f} GB/s ({link['peak_source']}), verdict {link['verdict']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
