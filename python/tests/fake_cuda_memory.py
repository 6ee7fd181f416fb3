"""A fake CUDA caching allocator for a CPU-only PyTorch (Debian's python3-torch), used by the hook's
tests and by baton's own tests of `baton run` (tests/cli/memory_integration_test.cpp): torch.cuda's
functions are replaced so that CUDA looks initialised, the script's CPU tensors stand for its blocks
(tracked with track()), and fake_alloc() does what the caching allocator does when cudaMalloc fails:
it calls the out-of-memory observer, then raises torch.cuda.OutOfMemoryError with PyTorch's text.
alloc() is a request that may fit (a block with its allocation stack) or not (fake_alloc); free_step()
frees what the step allocated, as its end frees its activations."""
import traceback

import torch

import baton._memory as _memory

state = {"observer": None, "resets": 0, "blocks": [], "step_blocks": [], "peak": 0, "next_address": 1 << 40}


CAPACITY = 2 << 20  # a small GPU: the script's few tensors fill it
SLACK = 64 << 10  # reserved but unallocated


def _allocated():
    return sum(b["size"] for b in state["blocks"])


def _stats(device=None):
    allocated = _allocated()
    return {"allocated_bytes": {"all": {"current": allocated, "peak": max(state["peak"], allocated)}},
            "reserved_bytes": {"all": {"current": allocated + SLACK}},
            "active_bytes": {"all": {"current": allocated}}, "inactive_split_bytes": {"all": {"current": 0}},
            "num_ooms": 0, "num_alloc_retries": 0}


def _reset(device=None):
    state["resets"] += 1
    state["peak"] = _allocated()


class _Props:
    total_memory = CAPACITY


def _snapshot():
    segs = [{"device": 0, "address": b["address"], "total_size": b["size"], "allocated_size": b["size"],
             "active_size": b["size"], "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
             "blocks": [dict(b, state="active_allocated", requested_size=b["size"])]} for b in state["blocks"]]
    traces = [{"action": "alloc", "addr": i, "size": 512, "stream": 0,
               "frames": [{"filename": "x.py", "line": i, "name": "f"}]} for i in range(300)]
    return {"segments": segs, "device_traces": [traces]}


def _record(*args, **kwargs):
    print("history:", sorted(kwargs.items()), flush=True)


def install(observer=True):
    """Makes torch.cuda look like a GPU's; `observer`: PyTorch 2.x's OOM observer exists."""
    _memory.on_device = lambda t, d: True  # the script's CPU tensors stand for CUDA ones
    torch.cuda.is_available = lambda: True
    torch.cuda.is_initialized = lambda: True
    torch.cuda.current_device = lambda: 0
    torch.cuda.memory_stats_as_nested_dict = _stats
    torch.cuda.reset_peak_memory_stats = _reset
    torch.cuda.get_device_properties = lambda d: _Props()
    torch.cuda.memory._snapshot = _snapshot
    torch.cuda.memory._record_memory_history = _record
    if observer:
        torch._C._cuda_attach_out_of_memory_observer = lambda f: state.__setitem__("observer", f)
    elif hasattr(torch._C, "_cuda_attach_out_of_memory_observer"):
        del torch._C._cuda_attach_out_of_memory_observer


def _size(n):  # PyTorch's format_size
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.2f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.2f} MiB"


def fake_alloc(n):
    """A request of `n` bytes that does not fit: the observer, then PyTorch 2.x's error and text."""
    allocated = _allocated()
    free = CAPACITY - allocated - SLACK
    if state["observer"]:
        state["observer"](0, n, allocated + SLACK, free)
    raise torch.cuda.OutOfMemoryError(
        f"CUDA out of memory. Tried to allocate {_size(n)}. GPU 0 has a total capacity of {_size(CAPACITY)} of which "
        f"{_size(free)} is free. Of the allocated memory {_size(allocated)} is allocated by PyTorch, and "
        f"{_size(SLACK)} is reserved by PyTorch but unallocated.")


def track(t, frames=None):
    """Counts tensor `t`'s storage as one of the allocator's blocks (`frames`: its allocation stack)."""
    s = t.storage()
    b = {"address": s.data_ptr(), "size": s.nbytes()}
    if frames:
        b["frames"] = frames
    state["blocks"].append(b)
    state["peak"] = max(state["peak"], _allocated())


def alloc(n):
    """A request of `n` bytes from the caller's line: a block with the caller's stack (innermost first, as
    PyTorch records them) when it fits, else the out-of-memory error."""
    if _allocated() + SLACK + n > CAPACITY:
        fake_alloc(n)
    frames = [{"filename": f.filename, "line": f.lineno, "name": f.name} for f in reversed(traceback.extract_stack()[:-1])]
    b = {"address": state["next_address"], "size": n, "frames": frames}
    state["next_address"] += n
    state["blocks"].append(b)
    state["step_blocks"].append(b)
    state["peak"] = max(state["peak"], _allocated())


def free_step():
    """Frees the blocks alloc() made since the last call (a step's activations)."""
    for b in state["step_blocks"]:
        state["blocks"].remove(b)
    state["step_blocks"] = []
