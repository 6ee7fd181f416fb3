"""CUDA memory from inside the training process, for `baton run` (docs/memory.md):

- each step's caching-allocator figures, sent with the step (step_figures);
- at a CUDA out-of-memory error, before the exception unwinds the evidence, a capture: the failed
  request, the step and its phase, the allocator's statistics and its snapshot (segments, blocks,
  and with --memory-history the last allocation events with their Python stacks), and the tensors
  found by walking the interpreter's objects (the modules' parameters, their gradients, the
  optimizers' state). Written as JSON next to the run (baton never unpickles) and its path sent as
  an "oom" event. PyTorch's out-of-memory observer is used where it exists (2.0 and later); the
  uncaught exception (sys.excepthook) otherwise;
- with `baton run --memory-history`, PyTorch's own record of allocation events
  (torch.cuda.memory._record_memory_history), started when the watched loop starts.

`baton run` asks through the environment:
    BATON_MEMORY_DIR      where a capture goes (the run's private directory); unset: no capture
    BATON_MEMORY_HISTORY  allocation events to keep (--memory-history); unset or 0: none recorded

Nothing here costs anything before an OOM, except the per-step figures (one read of the allocator's
statistics and a reset of its peaks).
"""
import gc
import json
import os
import re
import sys
import threading
import time

DIR = "BATON_MEMORY_DIR"
HISTORY = "BATON_MEMORY_HISTORY"
FRAMES = 32  # innermost frames kept of each stack
MAX_CAPTURES = 5  # per process: a loop that catches its OOMs and goes on does not pay for each one
_OWN_FILE = os.path.abspath(__file__)


def _torch():
    import torch
    return torch


def cuda_ready():
    """CUDA is there and this process has initialised it (never initialises it itself)."""
    torch = _torch()
    return torch.cuda.is_available() and torch.cuda.is_initialized()


_totals = {}


def _total(device):
    """The device's memory, asked once."""
    if device not in _totals:
        _totals[device] = int(_torch().cuda.get_device_properties(device).total_memory)
    return _totals[device]


def step_figures(reset_peak=True):
    """The allocator's figures at a step's end, for the current device, or None without CUDA:
    allocated, reserved, active, inactive split (free space inside split blocks: fragmentation),
    the peak allocation since the previous step (the allocator's peak statistics are reset here
    unless `reset_peak` is False), and the counts of OOMs and of retries after freeing the cache."""
    if not cuda_ready():
        return None
    torch = _torch()
    device = torch.cuda.current_device()
    s = torch.cuda.memory_stats_as_nested_dict(device)  # the nested form: no flattening to pay for

    def all_of(name, which="current"):
        return int(s.get(name, {}).get("all", {}).get(which, 0))

    out = {"device": device, "total_bytes": _total(device),
           "allocated_bytes": all_of("allocated_bytes"),
           "reserved_bytes": all_of("reserved_bytes"),
           "active_bytes": all_of("active_bytes"),
           "peak_allocated_bytes": all_of("allocated_bytes", "peak"),
           "inactive_split_bytes": all_of("inactive_split_bytes"),
           "num_ooms": int(s.get("num_ooms", 0)),
           "num_alloc_retries": int(s.get("num_alloc_retries", 0))}
    if reset_peak:
        torch.cuda.reset_peak_memory_stats(device)
    return out


def is_oom(error):
    """PyTorch's CUDA out-of-memory error: torch.cuda.OutOfMemoryError, or the RuntimeError of
    PyTorch 1.x whose text says "CUDA out of memory"."""
    oom_type = getattr(_torch().cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(error, oom_type):
        return True
    return isinstance(error, RuntimeError) and "CUDA out of memory" in str(error)


_SIZE = re.compile(r"Tried to allocate ([0-9.]+) (bytes|KiB|MiB|GiB|TiB)")
_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def requested_bytes(text):
    """The failed request's size in PyTorch's message, or None."""
    m = _SIZE.search(text)
    return int(round(float(m.group(1)) * _UNITS[m.group(2)])) if m else None


def _frames_of(frame):
    """A Python stack from `frame` outwards, innermost first, this module's own frames left out."""
    out = []
    while frame is not None and len(out) < FRAMES:
        code = frame.f_code
        if os.path.abspath(code.co_filename) != _OWN_FILE:
            out.append({"filename": code.co_filename, "line": frame.f_lineno, "name": code.co_name})
        frame = frame.f_back
    return out


def _failure_stack():
    """Where the failing request came from. The observer runs on the thread that allocated: in
    backward that is the autograd engine's, which has no Python frames, and the training thread,
    waiting in backward(), says where it was."""
    here = _frames_of(sys._getframe(1))
    if here:
        return here
    main = sys._current_frames().get(threading.main_thread().ident)
    return _frames_of(main) if main is not None else []


def phase_of(stack, steps_done):
    """The phase of the step a stack (innermost first) is in: optimizer, backward, data, forward;
    setup before the first step; other when nothing says."""
    files = [(f["filename"].replace("\\", "/"), f["name"]) for f in stack]
    for path, name in files:
        if "torch/optim/" in path or "torch/distributed/optim" in path:
            return "optimizer"
        if "torch/autograd/" in path or (name == "backward" and path.endswith("torch/_tensor.py")):
            return "backward"
        if "torch/utils/data/" in path:
            return "data"
    for path, name in files:
        if path.endswith("torch/nn/modules/module.py") and name in ("_call_impl", "_wrapped_call_impl", "__call__"):
            return "forward"
    return "setup" if steps_done == 0 else "other"


def on_device(t, device):
    """Whether tensor `t` lives on CUDA device `device` (tests replace this to count CPU tensors)."""
    return t.is_cuda and t.device.index == device


def _storage(t):
    """(address, bytes) of the storage behind a tensor: views of one storage count once."""
    try:
        s = t.untyped_storage()
    except AttributeError:  # PyTorch 1.x
        s = t.storage()
    try:
        n = s.nbytes()
    except (AttributeError, TypeError):
        n = t.element_size() * t.numel()
    return int(s.data_ptr()), int(n)


def known_tensors(device):
    """The tensors whose role is known, by walking the interpreter's objects: the parameters and
    buffers of every nn.Module, their gradients, every optimizer's state. Each storage once (in the
    first list that has it), as [address, bytes] pairs."""
    torch = _torch()
    seen = set()
    found = {"parameters": [], "gradients": [], "optimizer_state": []}

    def add(kind, t):
        if not isinstance(t, torch.Tensor) or not on_device(t, device):
            return
        address, n = _storage(t)
        if address and address not in seen:
            seen.add(address)
            found[kind].append([address, n])

    modules, optimizers = [], []
    for obj in gc.get_objects():
        if isinstance(obj, torch.nn.Module):
            modules.append(obj)
        elif isinstance(obj, torch.optim.Optimizer):
            optimizers.append(obj)
    for m in modules:
        for p in m.parameters(recurse=False):
            add("parameters", p)
        for b in m.buffers(recurse=False):
            add("parameters", b)
    for opt in optimizers:
        for group in opt.param_groups:
            for p in group["params"]:
                add("parameters", p)
    for m in modules:
        for p in m.parameters(recurse=False):
            add("gradients", p.grad)
    for opt in optimizers:
        for group in opt.param_groups:
            for p in group["params"]:
                add("gradients", p.grad)
        for state in opt.state.values():
            for v in (state.values() if isinstance(state, dict) else ()):
                add("optimizer_state", v)
    return found


def _trim(frames):
    return [{"filename": str(f.get("filename", "")), "line": int(f.get("line", 0) or 0), "name": str(f.get("name", ""))}
            for f in (frames or [])[:FRAMES]]


def snapshot_json(device, events):
    """The caching allocator's snapshot of `device` (torch.cuda.memory._snapshot()'s layout, only the
    keys baton reads), with at most `events` of its trace entries, the newest."""
    torch = _torch()
    take = getattr(torch.cuda.memory, "_snapshot", None)
    snap = take() if take is not None else torch.cuda.memory_snapshot()
    segments = snap if isinstance(snap, list) else snap.get("segments", [])  # 1.x: a list of segments
    out_segments = []
    for seg in segments:
        if seg.get("device", device) != device:
            continue
        blocks = []
        for b in seg.get("blocks", []):
            block = {"size": int(b.get("size", 0)), "requested_size": int(b.get("requested_size", b.get("size", 0))),
                     "state": str(b.get("state", "inactive"))}
            if "address" in b:
                block["address"] = int(b["address"])
            if b.get("frames"):
                block["frames"] = _trim(b["frames"])
            blocks.append(block)
        out_segments.append({"device": device, "address": int(seg.get("address", 0)),
                             "total_size": int(seg.get("total_size", 0)),
                             "allocated_size": int(seg.get("allocated_size", 0)),
                             "active_size": int(seg.get("active_size", 0)), "stream": int(seg.get("stream", 0) or 0),
                             "segment_type": str(seg.get("segment_type", "large")), "blocks": blocks})
    traces = [] if isinstance(snap, list) else snap.get("device_traces", [])
    mine = traces[device][-events:] if events and device < len(traces) else []
    out_traces = []
    for t in mine:
        entry = {"action": str(t.get("action", "")), "size": int(t.get("size", 0) or 0),
                 "stream": int(t.get("stream", 0) or 0)}
        if "addr" in t:
            entry["addr"] = int(t["addr"])
        if "device_free" in t:
            entry["device_free"] = int(t["device_free"])
        if t.get("frames"):
            entry["frames"] = _trim(t["frames"])
        out_traces.append(entry)
    return {"segments": out_segments, "device_traces": [[] for _ in range(device)] + [out_traces]}


def _int(name):
    try:
        return max(0, int(os.environ.get(name, "0")))
    except ValueError:
        return 0


class Recorder:
    """One per process: armed once CUDA is initialised (at a step's end), it records the history
    when asked and captures the allocator at an OOM."""

    def __init__(self, steps, rank_of, send):
        self.steps = steps  # the step clock: count and the current step's samples
        self.rank_of = rank_of
        self.send = send
        self.dir = os.environ.get(DIR)
        self.history = _int(HISTORY)
        self.pid = os.getpid()
        self.armed = False
        self.observer = False
        self.captures = 0
        self.quiet = 0  # > 0 while find_batch_size provokes its OOMs on purpose

    def arm(self):
        """Called at each step's end until it took: attaches the OOM observer (or the excepthook)
        and starts the history, once this process has initialised CUDA."""
        if self.armed or not self.dir or os.getpid() != self.pid or not cuda_ready():
            return
        self.armed = True
        torch = _torch()
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is not None:
            attach(self._observed)
            self.observer = True
        previous = sys.excepthook

        def hook(kind, error, tb):
            # Without the observer (PyTorch 1.x) the uncaught error is the capture's moment: the
            # traceback still holds the failing frames and their tensors.
            if not self.observer and is_oom(error):
                last = tb
                while last is not None and last.tb_next is not None:
                    last = last.tb_next
                stack = _frames_of(last.tb_frame) if last is not None else []
                self.capture(torch.cuda.current_device(), requested_bytes(str(error)), None, stack, str(error))
            previous(kind, error, tb)

        sys.excepthook = hook
        if self.history:
            self._start_history()

    def _start_history(self):
        rec = getattr(_torch().cuda.memory, "_record_memory_history", None)
        try:
            try:  # PyTorch 2.1 and later
                rec(enabled="all", context="all", stacks="python", max_entries=self.history)
            except TypeError:  # 2.0
                rec(True, trace_alloc_max_entries=self.history, trace_alloc_record_context=True)
        except Exception as e:
            self.history = 0
            print(f"baton: --memory-history records nothing: this PyTorch cannot ({e}); it needs PyTorch 2.0 "
                  f"or later", file=sys.stderr)

    def _observed(self, device, alloc, device_allocated, device_free):
        self.capture(device, alloc, device_free, _failure_stack(), "")

    def capture(self, device, requested, device_free, stack, message):
        """Writes the capture and sends its path; never raises (the training's own error goes on)."""
        if self.quiet or self.captures >= MAX_CAPTURES or not self.dir or os.getpid() != self.pid:
            return
        self.captures += 1
        self.steps.failed = True
        try:
            torch = _torch()
            c = {"baton_oom_capture": 1, "pid": os.getpid(), "rank": self.rank_of(), "device": int(device),
                 "t": time.time() * 1000.0, "torch": torch.__version__, "step": self.steps.count,
                 "batch_size": self.steps.samples, "phase": phase_of(stack, self.steps.count),
                 "autocast": bool(torch.is_autocast_enabled()), "history": bool(self.history),
                 "requested_bytes": None if requested is None else int(requested), "stack": stack}
            if message:
                c["message"] = message[:4096]
            try:
                c["device_total_bytes"] = int(torch.cuda.get_device_properties(device).total_memory)
            except Exception:
                pass
            if device_free is not None:
                c["device_free_bytes"] = int(device_free)
            s = torch.cuda.memory_stats_as_nested_dict(device)
            c["stats"] = {k: int(s.get(k, {}).get("all", {}).get("current", 0))
                          for k in ("allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes")}
            c["stats"]["peak_allocated_bytes"] = int(s.get("allocated_bytes", {}).get("all", {}).get("peak", 0))
            c["stats"]["num_ooms"] = int(s.get("num_ooms", 0))
            c["stats"]["num_alloc_retries"] = int(s.get("num_alloc_retries", 0))
            c["tensors"] = known_tensors(device)
            c["snapshot"] = snapshot_json(device, self.history)
            path = os.path.join(self.dir, f"oom-{os.getpid()}.json")
            with open(path + ".tmp", "w") as f:
                json.dump(c, f, separators=(",", ":"))
            os.replace(path + ".tmp", path)
            self.send({"type": "oom", "path": path, "rank": c["rank"]})
        except Exception as e:  # the capture is evidence, never a second failure
            print(f"baton: the out-of-memory capture failed: {e}", file=sys.stderr)
