"""Tuners that measure instead of guessing: the DataLoader settings that feed batches fastest on
this machine, and the batch size that fills the GPU's memory to the indicator table's best band
(60-85 %) rather than to the edge of an out-of-memory error. Used through baton.torch.
"""
import gc
import sys
import time

import torch
from torch.utils.data import DataLoader

from baton.checks import cpus_available

# The indicator table's best band for GPU memory (core/thresholds.hpp: gpu_memory_best_min/max).
BEST_MEMORY_BAND = (0.60, 0.85)


def _worker_counts(cpus, max_workers):
    top = min(cpus, max_workers) if max_workers is not None else cpus
    counts = {0, top}
    n = 1
    while n < top:
        counts.add(n)
        n *= 2
    return sorted(counts)


def _batches_per_second(loader, seconds, min_batches=3):
    """Batches per second after the first batch (worker start-up is a one-time cost with
    persistent workers), over `seconds` or one pass, whichever ends first."""
    it = iter(loader)
    try:
        next(it)
    except StopIteration:
        return 0.0
    start = time.perf_counter()
    n = 0
    for _ in it:
        n += 1
        if n >= min_batches and time.perf_counter() - start >= seconds:
            break
    took = time.perf_counter() - start
    del it  # ends the workers of this try before the next one starts
    return n / took if took > 0 and n else 0.0


def tune_loader(dataset, batch_size, budget_s=60.0, max_workers=None, quiet=False, **loader_kwargs):
    """Tries num_workers from 0 up to the CPUs available (0, 1, 2, 4, ... and the CPU count),
    pin_memory (on CUDA), prefetch_factor 2 and 4; measures batches/s of each for an equal share of
    `budget_s`; prints the table and returns the best settings as DataLoader keyword arguments
    (with persistent_workers=True whenever workers are used: it saves their start-up every epoch).
    Extra `loader_kwargs` (collate_fn, shuffle, ...) are passed to every DataLoader tried."""
    cpus = cpus_available()
    pins = [False, True] if torch.cuda.is_available() else [False]
    configs = []
    for workers in _worker_counts(cpus, max_workers):
        for pin in pins:
            for prefetch in ([None] if workers == 0 else [2, 4]):
                configs.append((workers, pin, prefetch))
    share = max(0.2, budget_s / len(configs))
    rows = []
    for workers, pin, prefetch in configs:
        kwargs = dict(loader_kwargs, batch_size=batch_size, num_workers=workers, pin_memory=pin)
        if workers > 0:
            kwargs.update(prefetch_factor=prefetch, persistent_workers=False)
        rate = _batches_per_second(DataLoader(dataset, **kwargs), share)
        rows.append((rate, workers, pin, prefetch))
    base = next((r[0] for r in rows if r[1] == 0), 0.0)
    best = max(rows, key=lambda r: (r[0], -r[1]))  # equal speed: fewer workers
    if not quiet:
        print(f"baton tune_loader: {len(rows)} settings, {share:.1f} s each, {cpus} CPUs, batch_size={batch_size}",
              file=sys.stderr)
        print(f"{'num_workers':>11} {'pin_memory':>10} {'prefetch':>8} {'batches/s':>10} {'vs 0 workers':>12}",
              file=sys.stderr)
        for rate, workers, pin, prefetch in rows:
            mark = "  <- best" if (rate, workers, pin, prefetch) == best else ""
            print(f"{workers:>11} {str(pin):>10} {prefetch or '-':>8} {rate:>10.1f} "
                  f"{(rate / base if base else 0):>11.2f}x{mark}", file=sys.stderr)
    rate, workers, pin, prefetch = best
    out = {"num_workers": workers, "pin_memory": pin}
    if workers > 0:
        out.update(persistent_workers=True, prefetch_factor=prefetch)
    return out


def is_oom(error):
    """PyTorch's out-of-memory error: torch.cuda.OutOfMemoryError (2.x), or the RuntimeError
    with "out of memory" (CUDA, 1.x) or "can't allocate memory" (the CPU allocator) in its message."""
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(error, oom_type):
        return True
    text = str(error)
    return isinstance(error, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _free():
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class _Try:
    """One batch size tried: fits (no OOM) and, on CUDA, its peak memory share."""

    def __init__(self, size, fits, peak_bytes=None, total_bytes=None):
        self.size, self.fits, self.peak_bytes, self.total_bytes = size, fits, peak_bytes, total_bytes

    @property
    def share(self):
        return self.peak_bytes / self.total_bytes if self.peak_bytes and self.total_bytes else None


def _try(step_fn, size, device):
    cuda = device is not None and device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    oom = False
    # The OOMs provoked here are the search's, not failures: the hook does not capture them.
    from baton import torch as hook  # (baton.torch imports this module: imported when first used)
    recorder = hook._recorder()
    recorder.quiet += 1
    try:
        step_fn(size)
        if cuda:
            torch.cuda.synchronize(device)
    except RuntimeError as error:  # torch.cuda.OutOfMemoryError is one
        if not is_oom(error):
            raise
        oom = True
    finally:
        recorder.quiet -= 1
    # Cleaned up only here, outside the except block: inside it the traceback still holds the
    # step's frames and their tensors (the leak that makes other finders OOM later in training).
    _free()
    if oom:
        return _Try(size, False)
    if cuda:
        return _Try(size, True, torch.cuda.max_memory_allocated(device),
                    torch.cuda.get_device_properties(device).total_memory)
    return _Try(size, True)


def find_batch_size(step_fn, start=2, max_size=None, device=None, band=BEST_MEMORY_BAND, quiet=False):
    """Finds the batch size to train with: `step_fn(batch_size)` runs one full training step
    (forward, backward, optimizer step) with a batch of that size and may raise PyTorch's OOM error.
    Doubles from `start` until a size runs out of memory (or passes `max_size`, or, on CUDA, its
    peak memory passes the band's top), then searches between the last size that fit and the
    first that did not. The answer is the largest size whose peak memory stays within `band` of
    the GPU's memory (the indicator table's 60-85 %), not the edge of OOM; without CUDA memory
    figures, memory is taken as proportional to the batch size, with the largest size that fits
    as 100 %; and when nothing ran out of memory at all (a CPU box up to `max_size`), there is no
    limit to keep a margin from, so the answer is the largest size that ran, and it says so.
    Returns a dict: batch_size, largest_fitting, first_oom (or None), limit_found (a size ran out
    of memory, or passed the band on CUDA), peak_bytes and total_bytes (CUDA only)."""
    if device is None and torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
    top = band[1]
    tries = {}

    def run(size):
        if size not in tries:
            tries[size] = _try(step_fn, size, device)
        return tries[size]

    size, good, bad = max(1, start), None, None
    while True:  # doubling
        t = run(size)
        over = t.share is not None and t.share > top
        if t.fits and not over:
            good = size
            if max_size is not None and size >= max_size:
                break
            size = size * 2 if max_size is None else min(size * 2, max_size)
        else:
            bad = size
            break
    while good is None and size > 1:  # even `start` was too big: halve until one fits
        size //= 2
        if run(size).fits and not (run(size).share is not None and run(size).share > top):
            good = size
        else:
            bad = size
    if good is not None and bad is not None:  # binary search between them
        lo, hi = good, bad
        while hi - lo > 1:
            mid = (lo + hi) // 2
            t = run(mid)
            if t.fits and not (t.share is not None and t.share > top):
                lo = mid
            else:
                hi = mid
        good, bad = lo, hi
    if good is None:
        raise RuntimeError("baton find_batch_size: even batch size 1 does not fit")
    largest = max(s for s, t in tries.items() if t.fits)
    first_oom = min((s for s, t in tries.items() if not t.fits), default=None)
    chosen = good
    limit_found = bad is not None
    if tries[good].share is None and limit_found:
        # No memory figures (CPU): memory ~ batch size, the largest fitting size = 100 %.
        chosen = max(1, min(good, int(largest * top)))
    result = {"batch_size": chosen, "largest_fitting": largest, "first_oom": first_oom, "limit_found": limit_found}
    if tries[good].share is not None:
        result.update(peak_bytes=tries[good].peak_bytes, total_bytes=tries[good].total_bytes)
    if not quiet:
        tried = ", ".join(f"{s}{'' if t.fits else ' OOM'}" for s, t in sorted(tries.items()))
        memory = (f", peak {result['peak_bytes'] / 2**30:.1f} of {result['total_bytes'] / 2**30:.1f} GiB "
                  f"({100 * tries[good].share:.0f} %)" if "peak_bytes" in result else
                  " (no GPU memory figures: memory taken as proportional to the batch size)" if limit_found else
                  f" (nothing ran out of memory up to {largest}: no limit found, so the largest size that ran)")
        print(f"baton find_batch_size: tried {tried}; batch_size={chosen}{memory}", file=sys.stderr)
    return result
