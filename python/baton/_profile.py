"""The profiler window of `baton run --profile` (docs/profile.md): a few steps of the training loop
recorded with torch.profiler, from inside baton.torch.watch, with no change to the script.

`baton run` asks for it through the environment:
    BATON_PROFILE_DIR     where the trace goes (the run's private directory)
    BATON_PROFILE_WARMUP  steps to let pass first (start-up, allocator warm-up, cuDNN autotuning)
    BATON_PROFILE_STEPS   steps recorded
    BATON_PROFILE_TRIGGER (--profile=auto) a file: the window starts at the step after it appears

The profiler runs for those steps only (CPU and CUDA activities, shapes and stacks on) and costs
nothing before or after: outside the window the hook does what it always did. The trace is written
gzipped (trace-PID.json.gz) and its path sent to baton as a "profile" event. Only rank 0 records
(every rank's trace would cost the same on each, and they judge alike; the rank is in the event).
A PyTorch built without Kineto (Debian's 1.13) writes the legacy profiler's trace without stacks:
each event's Python stack is then added as its "Call stack", from the profiler's own events.
"""
import atexit
import gzip
import json
import os
import shutil
import sys

DIR = "BATON_PROFILE_DIR"
WARMUP = "BATON_PROFILE_WARMUP"
STEPS = "BATON_PROFILE_STEPS"
TRIGGER = "BATON_PROFILE_TRIGGER"


def _int(name, default):
    try:
        return max(0, int(os.environ.get(name, default)))
    except ValueError:
        return default


class Window:
    """One window per process: armed by the environment, started at the end of the warm-up step,
    stepped at each step's end, written and closed after its steps."""

    def __init__(self, rank_of, send):
        self.dir = os.environ.get(DIR)
        self.warmup = _int(WARMUP, 10)
        self.steps = max(1, _int(STEPS, 5))
        self.trigger = os.environ.get(TRIGGER)
        self.rank_of = rank_of
        self.send = send
        self.prof = None
        self.done = not self.dir
        self.abandoned = False
        self.pid = os.getpid()

    def step_ended(self, count):
        """Called when step number `count` (0-based) has ended."""
        if self.done or os.getpid() != self.pid:
            return
        try:
            if self.prof is None:
                # --profile=auto: one stat a step until baton starts the window.
                if self.trigger is not None and not os.path.exists(self.trigger):
                    return
                if count + 1 >= self.warmup:
                    self._start()
                return
            self.prof.step()
            if self.recorded:
                self.prof.stop()
                self.prof = None
                self.done = True
        except Exception as e:  # the training goes on whatever the profiler does
            self.done = True
            self.prof = None
            print(f"baton: the profile window failed: {e}", file=sys.stderr)

    def _start(self):
        if self.rank_of() != 0:
            self.done = True
            return
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule

        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            activities.append(ProfilerActivity.CUDA)
        self.recorded = False
        # warmup=1: the profiler's own start-up is not in the steps it records.
        self.prof = profile(activities=activities, schedule=schedule(wait=0, warmup=1, active=self.steps, repeat=1),
                            record_shapes=True, with_stack=True, on_trace_ready=self._write)
        self.prof.start()
        # A loop that ends inside the window: the profiler is stopped before the interpreter ends (a
        # stack tracer left running makes PyTorch hang at exit); the partial window is not written.
        atexit.register(self._abandon)

    def _abandon(self):
        if self.prof is None:
            return
        prof, self.prof, self.done = self.prof, None, True
        self.abandoned = True  # stop() hands PyTorch's partial window to _write: not kept
        try:
            prof.stop()
        except Exception:
            pass

    def _write(self, prof):
        if self.abandoned:
            return
        self.recorded = True
        plain = os.path.join(self.dir, f"trace-{os.getpid()}.json")
        prof.export_chrome_trace(plain)
        with open(plain, "rb") as f:
            legacy = f.read(1) == b"["
        if legacy:
            _add_call_stacks(prof, plain)
        packed = plain + ".gz"
        with open(plain, "rb") as src, gzip.open(packed + ".tmp", "wb", compresslevel=3) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.rename(packed + ".tmp", packed)
        os.unlink(plain)
        self.send({"type": "profile", "path": packed, "steps": self.steps, "rank": self.rank_of()})


def _add_call_stacks(prof, path):
    """The legacy profiler's export leaves with_stack's stacks out; its events have them. Matched by
    name and start time, each exported operator gets its stack as "Call stack" (innermost first,
    ';'-separated), the argument Kineto of PyTorch 1.8 to 1.10 wrote."""
    stacks = {}
    for e in prof.events():
        if e.stack:
            stacks[(e.name, e.time_range.start)] = ";".join(e.stack)
    with open(path) as f:
        events = json.load(f)
    for ev in events:
        s = stacks.get((ev.get("name"), ev.get("ts")))
        if s:
            ev.setdefault("args", {})["Call stack"] = s
    with open(path, "w") as f:
        json.dump(events, f)
