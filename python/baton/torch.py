"""baton's PyTorch hook: step events for `baton run`.

    loader = baton.torch.watch(loader)
    for batch in loader:             # each step: time waiting for the batch vs the rest
        ...

    for batch in baton.torch.watch(loader, scaler=scaler):   # also the GradScaler's scale
        ...

When the loop is not a plain for-loop over the loader (several loaders, gradient accumulation,
a step that spans batches), mark the end of each step yourself; the waits of watched loaders
within it are added up:

    for i, batch in enumerate(baton.torch.watch(loader, manual_steps=True)):
        ...
        if (i + 1) % accumulation == 0:
            optimizer.step()
            baton.torch.step()       # samples: those of the batches since the last step

Works with PyTorch 1.13 to 2.x; outside `baton run` it records nothing and says so once.
Also here: check() (training-setup mistakes, baton/checks.py), tune_loader() and find_batch_size()
(baton/tuners.py). docs/python.md describes every function.
A step is measured on the host: the time from asking for one batch to asking for the next, and,
within it, the time the loader took to hand the batch over (the data wait). CUDA work runs
asynchronously, so single steps can be uneven while the host runs ahead; their sums are exact.
"""
import os
import sys
import time

import torch

from baton import _events
from baton import _memory
from baton import _profile
from baton import _tune
from baton import checks as _checks
from baton.tuners import find_batch_size, tune_loader  # noqa: F401  (baton.torch's public functions)


def _batch_size(batch):
    """The number of samples in a batch, as far as its shape tells: the first dimension of the
    first tensor found (a tensor, a sequence of them, a mapping of them), else None."""
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() > 0 else None
    if isinstance(batch, (list, tuple)):
        for item in batch:
            n = _batch_size(item)
            if n is not None:
                return n
    if isinstance(batch, dict):
        for item in batch.values():
            n = _batch_size(item)
            if n is not None:
                return n
    return None


def _rank():
    """torch.distributed's rank once initialised; before that the launcher's RANK (torchrun and
    baton launch set it), so steps taken before init_process_group are not all rank 0."""
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


class _Steps:
    """The process's step clock: one per process, shared by every watched loader."""

    def __init__(self):
        self.count = 0
        self.started = None  # when the current step began (perf_counter)
        self.wait = 0.0  # data wait within the current step, seconds
        self.samples = None
        self.manual = False  # step() was called: watched loaders no longer end steps
        self.scaler = None
        self.step_peaks = True  # the allocator's peak statistics are reset at each step's end
        self.failed = False  # the hook captured a CUDA out-of-memory error in the current step
        self.explicit = False  # the script called watch() or step(): the automatic steps (baton/_auto.py) stop

    def go_explicit(self):
        """The script's own watch() or step() takes over from the automatic steps: a step those began
        is dropped, so nothing is counted twice."""
        if not self.explicit:
            self.explicit = True
            self.started = None
            self.wait = 0.0
            self.samples = None

    def waited(self, seconds, samples):
        if self.started is None:
            self.started = time.perf_counter() - seconds
        self.wait += seconds
        if samples is not None:
            self.samples = (self.samples or 0) + samples

    def end(self, samples=None, now=None, auto=False):
        """Ends the current step and sends it; the next one starts after the hook's own work here.
        Returns the seconds the profiler window took (its start, its steps, its stop and export: up
        to seconds), which belong to no step: neither this one's time nor the next one's data wait."""
        now = time.perf_counter() if now is None else now
        window_cost = 0.0
        if self.started is not None:
            event = {
                "type": "step",
                "rank": _rank(),
                "step": self.count,
                "step_ms": (now - self.started) * 1000.0,
                "wait_ms": self.wait * 1000.0,
            }
            n = samples if samples is not None else self.samples
            if n is not None:
                event["samples"] = int(n)
            if auto:
                event["auto"] = True
            data = {}
            # Only under baton run: outside it nothing reads them, and the peaks are left alone.
            memory = _memory.step_figures(self.step_peaks) if _events.sender().connected else None
            if memory is not None:
                data["cuda"] = memory
            if self.scaler is not None and self.scaler.is_enabled():
                data["scale"] = float(self.scaler.get_scale())
            if data:
                event["data"] = data
            _events.sender().send(event)
            self.count += 1
            before = time.perf_counter()
            _window().step_ended(self.count - 1)
            window_cost = time.perf_counter() - before
            _recorder().arm()
        self.started = now + window_cost
        self.wait = 0.0
        self.samples = None
        self.failed = False
        _tune.step_ended()  # baton tune's trial ends here once it has its steps
        return window_cost


_steps = _Steps()
_profile_window = None
_memory_recorder = None


def _window():
    """The process's profiler window (`baton run --profile`), made at its first step; a forked
    process (a DataLoader worker) never records."""
    global _profile_window
    if _profile_window is None:
        _profile_window = _profile.Window(_rank, lambda e: _events.sender().send(e))
    return _profile_window


def _recorder():
    """The process's out-of-memory recorder (baton/_memory.py), armed once CUDA is initialised."""
    global _memory_recorder
    if _memory_recorder is None:
        _memory_recorder = _memory.Recorder(_steps, _rank, lambda e: _events.sender().send(e))
    return _memory_recorder


class _Watched:
    def __init__(self, loader, scaler, manual_steps, step_peaks):
        self.loader = loader
        self.scaler = scaler
        self.manual_steps = manual_steps
        self.step_peaks = step_peaks

    def __len__(self):
        return len(self.loader)

    def __getattr__(self, name):  # sampler, dataset, batch_size...: the loader's own
        return getattr(self.loader, name)

    def __iter__(self):
        _events.notice_once("baton.torch.watch")
        _steps.go_explicit()
        if self.scaler is not None:
            _steps.scaler = self.scaler
        if self.manual_steps:
            _steps.manual = True
        _steps.step_peaks = self.step_peaks
        _recorder().arm()
        it = iter(self.loader)
        while True:
            asked = time.perf_counter()
            # In a plain for-loop, asking for the next batch ends the previous step (the profiler
            # window's own time there is no data wait).
            if not _steps.manual and _steps.started is not None:
                asked += _steps.end(now=asked)
            try:
                batch = next(it)
            except StopIteration:
                _steps.started = None  # the epoch's end is no step
                _steps.wait = 0.0
                _steps.samples = None
                return
            got = time.perf_counter()
            if _steps.started is None:
                _steps.started = asked
            _steps.waited(got - asked, _batch_size(batch))
            try:
                yield batch
            except GeneratorExit:  # the loop broke out: its last step ends here
                # Unless a CUDA out-of-memory error ended it (the hook captured one in this step): that
                # step never ended, and its figures would be the failure's, not a step's.
                if not _steps.manual and _steps.started is not None and not _steps.failed:
                    _steps.end()
                _steps.started = None
                raise


def watch(loader, scaler=None, manual_steps=False, step_peaks=True):
    """Wraps any iterable loader (a DataLoader or anything with __iter__) to measure each step:
    the time spent waiting for the next batch against the whole step, samples per step, and on
    CUDA the caching allocator's figures at the step's end with the step's peak allocation; with
    `scaler` (a GradScaler), its scale. Each batch is a step, unless `manual_steps`: then step()
    marks where steps end (a call to step() also switches to that from then on). The step's peak
    is taken by resetting PyTorch's peak statistics at each step's end, so the script's own
    torch.cuda.max_memory_allocated() says the peak since the last step; `step_peaks=False` leaves
    them alone (the peak sent is then the run's). Under `baton run`, a CUDA out-of-memory error
    is captured before it unwinds (docs/memory.md). Returns an iterable that yields the loader's
    batches unchanged."""
    return _Watched(loader, scaler, manual_steps, step_peaks)


def step(samples=None):
    """Marks the end of a training step when the loop is not a plain for-loop over one watched
    loader. `samples`: how many samples the step trained on (default: the watched batches')."""
    _events.notice_once("baton.torch.step")
    _steps.go_explicit()
    _steps.manual = True
    _steps.end(samples=samples)


def _merge_ranks(per_rank):
    """[findings of rank 0, of rank 1, ...] -> one finding per (rule, subject) with its "ranks"."""
    merged = {}
    for r, findings in enumerate(per_rank):
        for f in findings or []:
            key = (f["rule"], f["subject"])
            if key not in merged:
                merged[key] = dict(f, ranks=[])
            merged[key]["ranks"].append(r)
    world = len(per_rank)
    for f in merged.values():
        if len(f["ranks"]) < world:
            f["summary"] += f" (rank{'s' if len(f['ranks']) > 1 else ''} {', '.join(map(str, f['ranks']))} of {world})"
    return list(merged.values())


def check(model=None, loader=None, optimizer=None, scaler=None, amp_dtype=None, quiet=False):
    """Checks the training setup and returns the findings (dicts with the fields of baton's
    findings: rule, severity, subject, summary, recommendation, snippet, doc), most severe first.
    Each is printed to stderr (unless `quiet`) and sent to `baton run`, which reports it with its
    own findings. `amp_dtype`: the dtype given to torch.autocast, if any (torch.float16 needs an
    enabled GradScaler `scaler`). Under torch.distributed every rank must call it (the seed check
    gathers from all ranks)."""
    found = (_checks.loader_checks(loader, model) + _checks.model_checks(model)
             + _checks.precision_checks(amp_dtype, scaler) + _checks.optimizer_checks(model, optimizer)
             + _checks.rank_checks())
    world, rank = _checks._world()
    if world > 1:
        # One report for the job: the ranks' findings merged (same rule and subject), each naming
        # the ranks it concerns when not all of them; rank 0 prints and sends it, the others return it.
        gathered = [None] * world
        torch.distributed.all_gather_object(gathered, found)
        found = _merge_ranks(gathered)
    order = {"critical": 0, "warning": 1, "info": 2}
    found.sort(key=lambda f: (order[f["severity"]], f["rule"]))
    if rank != 0:
        return found
    for f in found:
        if not quiet:
            print(f"baton: {f['severity']} {f['rule']} [{f['subject']}]: {f['summary']}\n"
                  f"      fix: {f['recommendation']}", file=sys.stderr)
        event = {"type": "finding"}
        event.update(f)
        _events.sender().send(event)
    return found
