"""Steps with no change to the script: what `baton run`, `baton launch`, queued jobs and `baton tune`
patch into PyTorch when the script imports it (docs/python.md, "Without a line of code").

The shim baton puts first on a job's PYTHONPATH (its sitecustomize.py) calls install() once `import
torch` has finished, when BATON_EVENTS is set and BATON_AUTO_HOOK is not "0". It patches:

- the optimizer step, where every training loop goes through: PyTorch's global step post-hook
  (torch.optim.optimizer.register_optimizer_step_post_hook, PyTorch 2.0 and later), else a wrapper of
  each optimizer class's `step` (PyTorch 1.13), and GradScaler.step (a step the scaler skips for an
  inf gradient is still the loop's step). A step ends at each step of the optimizer that steps most
  often (the first one to step when several step equally often: a GAN's two optimizers make one step);
  a step inside another (an optimizer wrapping another, the scaler calling the optimizer) counts once;
- DataLoader iterators (`_BaseDataLoaderIter.__next__`): the time spent inside `__next__` is data wait,
  the batch's leading dimension its samples. A pass over a loader during which no optimizer stepped
  (an evaluation pass: it ended, or was dropped, before the next step) is neither data wait nor step
  time: its span is taken out of the step it fell in.

Each step is sent by the same clock as baton.torch.watch (baton/torch.py: allocator figures, the
profiler window, the out-of-memory capture follow). The explicit hook wins: once the script calls
baton.torch.watch() or baton.torch.step(), this module sends nothing more.
"""
import functools
import os
import sys
import time
import weakref

from baton import _events
from baton import _tune

ENV = "BATON_AUTO_HOOK"  # "0": do not install (baton run --no-auto-hook)

_installed = False
_depth = 0  # > 0 inside a counted step: a step inside it is the same step
_pacer = None  # weakref of the optimizer whose steps end steps
_others = {}  # id(optimizer) -> its steps since the pacer's last one
_passes = []  # the loader passes that yielded a batch in the current step


class _Pass:
    """One iterator over a DataLoader: its figures within the current step, and whether an optimizer
    stepped while it was alive (a training pass) or not yet."""
    __slots__ = ("it", "first", "last", "wait", "samples", "trained", "ended", "loader", "owner")

    def __init__(self, iterator):
        self.it = weakref.ref(iterator)
        self.loader = iterator.__dict__.get("_baton_loader")  # its DataLoader's settings (baton/_tune.py)
        self.owner = iterator.__dict__.get("_baton_owner")  # a weakref of its DataLoader
        self.first = None  # when its first batch of this step was asked for
        self.last = 0.0
        self.wait = 0.0
        self.samples = None
        self.trained = False
        self.ended = False


_steps = None  # baton.torch's step clock, once imported


def _clock():
    global _steps
    if _steps is None:
        from baton import torch as hook
        _steps = hook._steps
    return _steps


def _listening(steps):
    return not steps.explicit and _events.sender().connected


def _exclude(steps, p, end):
    """Takes an evaluation pass out of the current step: its span, its wait, its samples."""
    if steps.started is not None and p.first is not None:
        steps.started += max(0.0, end - p.first)
        steps.wait = max(0.0, steps.wait - p.wait)
        if p.samples is not None and steps.samples is not None:
            steps.samples = max(0, steps.samples - p.samples) or None
    p.first = None
    p.wait = 0.0
    p.samples = None


def _next_batch(original):
    from baton.torch import _batch_size

    @functools.wraps(original)
    def __next__(self):
        steps = _clock()
        if not _listening(steps):
            return original(self)
        p = self.__dict__.get("_baton_pass")
        if p is None:
            p = self._baton_pass = _Pass(self)
        asked = time.perf_counter()
        try:
            batch = original(self)
        except StopIteration:
            p.ended = True
            if p.first is not None and not p.trained:
                _exclude(steps, p, time.perf_counter())
            raise
        got = time.perf_counter()
        if p.first is None:
            p.first = asked
            _passes.append(p)
        if steps.started is None:
            steps.started = asked
        p.last = got
        p.wait += got - asked
        n = _batch_size(batch)
        if n is not None:
            p.samples = (p.samples or 0) + n
        steps.waited(got - asked, n)
        return batch

    __next__._baton_patched = True
    return __next__


def stepped(optimizer):
    """An optimizer (or a GradScaler for it) stepped: the end of a step when it paces the loop."""
    global _pacer
    steps = _clock()
    if not _listening(steps):
        return
    pacer = _pacer() if _pacer is not None else None
    if pacer is None:
        _pacer = weakref.ref(optimizer)
        _others.clear()
    elif pacer is not optimizer:
        n = _others[id(optimizer)] = _others.get(id(optimizer), 0) + 1
        if n < 2:
            return
        # It stepped twice since the pacer last did: it steps more often, so it paces from now on.
        _pacer = weakref.ref(optimizer)
        _others.clear()
    else:
        _others.clear()
    now = time.perf_counter()
    for p in _passes:
        if p.it() is None and not p.trained and not p.ended:
            _exclude(steps, p, p.last)  # dropped before it ended, with no step inside: an evaluation
        else:
            p.trained = True
            owner = p.owner() if p.owner is not None else None
            if owner is not None:
                owner._baton_trained = True  # baton run --tune-live tunes this loader
            if p.loader is not None:
                _tune.say_once("loader", p.loader)  # the training loader, for baton tune
        p.first = None
        p.wait = 0.0
        p.samples = None
    _passes.clear()
    if "process" not in _tune._said:
        try:
            _tune.say_once("process", _tune.process_facts(sys.modules["torch"], optimizer))
        except Exception:
            pass
    if steps.started is None:  # no loader gave a batch yet: this step's start is unknown
        steps.started = now
        return
    steps.end(now=now, auto=True)


def _counted(step):
    """An optimizer class's step (or GradScaler.step) that ends a step, once however deep it nests;
    `optimizer_of` picks the optimizer from the call."""
    @functools.wraps(step)
    def counted(self, *args, **kwargs):
        global _depth
        _depth += 1
        try:
            result = step(self, *args, **kwargs)
        finally:
            _depth -= 1
        if _depth == 0:
            stepped(args[0] if isinstance(self, _scaler_classes) and args else self)
        return result

    counted._baton_counted = True
    return counted


_scaler_classes = ()


def _wrap_step_of(cls):
    if not getattr(cls.step, "_baton_counted", False):
        cls.step = _counted(cls.step)


def _patch_optimizers(torch):
    global _scaler_classes
    optimizer = torch.optim.Optimizer
    module = sys.modules.get("torch.optim.optimizer")
    post_hook = getattr(module, "register_optimizer_step_post_hook", None)
    if post_hook is not None:
        def hook(opt, args, kwargs):
            if _depth == 0:
                stepped(opt)
        post_hook(hook)
    else:
        init = optimizer.__init__

        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            _wrap_step_of(type(self))

        __init__._baton_patched = True
        optimizer.__init__ = __init__
    scalers = []
    for name in ("torch.amp.grad_scaler", "torch.cuda.amp.grad_scaler"):
        m = sys.modules.get(name)
        if m is None:
            try:
                __import__(name)
                m = sys.modules[name]
            except Exception:
                continue
        cls = getattr(m, "GradScaler", None)
        if cls is not None and cls not in scalers:
            scalers.append(cls)
    _scaler_classes = tuple(scalers)
    for cls in scalers:
        # Only the class that defines step (torch.cuda.amp's GradScaler inherits torch.amp's in 2.3+).
        if "step" in cls.__dict__ and not getattr(cls.step, "_baton_counted", False):
            cls.step = _scaled(cls.step)


def _scaled(step):
    """GradScaler.step(optimizer): the loop's step even when the scaler skips the optimizer's; the
    scaler's scale then travels with each step (as watch(loader, scaler=...) sends it)."""
    counted = _counted(step)

    def scaled_step(self, *args, **kwargs):
        clock = _clock()
        if clock.scaler is None:
            clock.scaler = self
        return counted(self, *args, **kwargs)

    scaled_step._baton_counted = True
    scaled_step.__wrapped__ = step
    scaled_step.__doc__ = step.__doc__
    return scaled_step


def install(torch):
    """Patches `torch` (the module, just imported) once per process. Says why on stderr when it
    cannot (the script runs on unchanged either way)."""
    global _installed
    if _installed or os.environ.get(ENV) == "0":
        return
    _installed = True
    try:
        iterator = torch.utils.data.dataloader._BaseDataLoaderIter
        if not getattr(iterator.__next__, "_baton_patched", False):
            iterator.__next__ = _next_batch(iterator.__next__)
        _patch_optimizers(torch)
        _tune.install(torch)
        _events.sender().send({"type": "hook", "mode": "auto", "torch": str(torch.__version__)})
    except Exception as e:  # a PyTorch this does not know: the script runs as it would without baton
        print(f"baton: steps will not be measured without baton.torch.watch: {type(e).__name__}: {e}",
              file=sys.stderr)
