"""What `baton tune` and `baton run --tuned` set in the training process with no change to the script,
and what a trial needs from it (docs/tune.md). Installed by baton/_auto.py once torch is imported.

    BATON_TUNE          the settings, a JSON object (src/tune/settings.hpp): num_workers, pin_memory,
                        persistent_workers, prefetch_factor, batch_size (every DataLoader the script makes),
                        threads (torch.set_num_threads), cudnn_benchmark, tf32, autocast ("bfloat16":
                        the main thread's CUDA ops under torch.autocast)
    BATON_TRIAL_STOP    a path: once it exists, the script ends at its next step's end (SystemExit), so a
                        trial stops cleanly at a step, its DataLoader workers with it
    BATON_TRIAL_LOSSES  "1": the scalar each backward() starts from (the loss) is kept, on its device, with
                        no sync, and sent once at the trial's end
    BATON_LIVE_TUNE     a path (`baton run --tune-live`): a JSON object {"num_workers": N, "prefetch_factor": P}
                        baton writes there is applied to the training DataLoader at its next epoch's start
                        (a new iterator, never mid-epoch), and said back with a "live" event

Facts baton judges the baseline by are sent once per process: the training DataLoader's settings (at the
first step it feeds) and the process's (threads, CUDA, the GPU's compute capability, cuDNN and TF32 flags).
"""
import atexit
import inspect
import json
import math
import os
import sys
import weakref

from baton import _events

TUNE = "BATON_TUNE"
STOP = "BATON_TRIAL_STOP"
LIVE = "BATON_LIVE_TUNE"
LOSSES = "BATON_TRIAL_LOSSES"
MAX_LOSSES = 400  # the last ones; a datagram holds at most 16 KiB

_settings = {}
_stop = None
_losses = None  # the recorded loss tensors, when asked for
_said = set()  # the facts already sent by this process ("loader", "process")
_live = None  # BATON_LIVE_TUNE's path
_live_seen = None  # the control file's text last applied
_prefetch_default = 2  # DataLoader's own default (None in PyTorch 2.x)
_pid = os.getpid()


def settings():
    return _settings


def _loader_overrides(bound, arguments):
    """The DataLoader's arguments with the tuned settings in place (only what applies: workers' options
    need workers; the batch size only where the loader batches by it)."""
    s = _settings
    if "num_workers" in s:
        arguments["num_workers"] = s["num_workers"]
    workers = arguments.get("num_workers", 0) or 0
    if "pin_memory" in s:
        arguments["pin_memory"] = s["pin_memory"]
    if workers > 0:
        if "persistent_workers" in s and "persistent_workers" in bound.signature.parameters:
            arguments["persistent_workers"] = s["persistent_workers"]
        if "prefetch_factor" in s and "prefetch_factor" in bound.signature.parameters:
            arguments["prefetch_factor"] = s["prefetch_factor"]
    else:
        # PyTorch refuses these without workers (2.x: prefetch_factor must be None then).
        if arguments.get("persistent_workers"):
            arguments["persistent_workers"] = False
        if "prefetch_factor" in arguments and "prefetch_factor" in bound.signature.parameters:
            default = bound.signature.parameters["prefetch_factor"].default
            arguments["prefetch_factor"] = default
    if "batch_size" in s and arguments.get("batch_sampler") is None and arguments.get("batch_size", 1) is not None:
        arguments["batch_size"] = s["batch_size"]


def _patch_loader(torch):
    loader = torch.utils.data.DataLoader
    init = loader.__init__
    if getattr(init, "_baton_patched", False):
        return
    signature = inspect.signature(init)
    global _prefetch_default
    if "prefetch_factor" in signature.parameters:
        _prefetch_default = signature.parameters["prefetch_factor"].default

    def __init__(self, *args, **kwargs):
        if _settings:
            try:
                bound = signature.bind(self, *args, **kwargs)
                _loader_overrides(bound, bound.arguments)
                args, kwargs = bound.args[1:], bound.kwargs
            except TypeError:
                pass  # PyTorch says what is wrong with the script's own arguments
        init(self, *args, **kwargs)

    __init__._baton_patched = True
    __init__.__wrapped__ = init
    __init__.__doc__ = init.__doc__
    loader.__init__ = __init__
    get_iterator = loader._get_iterator

    def _get_iterator(self):
        it = get_iterator(self)
        try:
            it._baton_loader = loader_facts(self)
            it._baton_owner = weakref.ref(self)  # marked as training once an optimizer steps during its pass
        except Exception:
            pass
        return it

    _get_iterator.__wrapped__ = get_iterator
    loader._get_iterator = _get_iterator
    iterate = loader.__iter__

    def __iter__(self):
        if _live is not None and self.__dict__.get("_baton_trained"):
            _apply_live(self)
        return iterate(self)

    __iter__.__wrapped__ = iterate
    loader.__iter__ = __iter__


def _apply_live(loader):
    """At a training DataLoader's epoch start: the workers and prefetch baton asked for, if they changed."""
    global _live_seen
    try:
        with open(_live) as f:
            text = f.read()
    except OSError:
        return
    if text == _live_seen:
        return
    try:
        want = json.loads(text)
        workers = int(want["num_workers"])
        prefetch = int(want.get("prefetch_factor", 2))
    except (ValueError, KeyError, TypeError):
        return
    _live_seen = text
    if workers == loader.num_workers and (workers == 0 or prefetch == loader.prefetch_factor):
        # Already so: said all the same, so baton knows it holds.
        _events.sender().send({"type": "live", "num_workers": workers, "prefetch_factor": prefetch})
        return
    # Persistent workers keep their iterator across epochs: end it, so the next one starts with the new count.
    it = loader.__dict__.get("_iterator")
    if it is not None:
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()
        loader._iterator = None
    loader.num_workers = workers
    if workers > 0:
        loader.prefetch_factor = prefetch
    elif "prefetch_factor" in loader.__dict__:
        loader.prefetch_factor = _prefetch_default  # PyTorch 2.x wants None without workers, 1.13 its 2
    _events.sender().send({"type": "live", "num_workers": workers,
                           "prefetch_factor": int(loader.prefetch_factor or 2)})


def loader_facts(loader):
    """What `baton tune` needs to know of a DataLoader."""
    try:
        batches = len(loader)
    except TypeError:  # an IterableDataset without __len__
        batches = None
    facts = {"num_workers": int(loader.num_workers), "pin_memory": bool(loader.pin_memory),
             "persistent_workers": bool(getattr(loader, "persistent_workers", False))}
    prefetch = getattr(loader, "prefetch_factor", None)
    if prefetch is not None and loader.num_workers > 0:
        facts["prefetch_factor"] = int(prefetch)
    if loader.batch_size is not None:
        facts["batch_size"] = int(loader.batch_size)
    if batches is not None:
        facts["batches"] = int(batches)
    return facts


def say_once(kind, facts):
    if kind in _said or os.getpid() != _pid:
        return
    _said.add(kind)
    event = {"type": kind}
    event.update(facts)
    _events.sender().send(event)


def process_facts(torch, optimizer):
    cuda = False
    try:
        cuda = bool(optimizer.param_groups[0]["params"][0].is_cuda)
    except Exception:
        pass
    facts = {"threads": int(torch.get_num_threads()), "cuda": cuda,
             "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
             "tf32": bool(getattr(torch.backends.cuda.matmul, "allow_tf32", False))}
    if cuda:
        try:
            facts["compute_major"] = int(torch.cuda.get_device_capability()[0])
        except Exception:
            pass
    return facts


def _apply_process(torch):
    s = _settings
    if "threads" in s:
        torch.set_num_threads(int(s["threads"]))
    if "cudnn_benchmark" in s:
        torch.backends.cudnn.benchmark = bool(s["cudnn_benchmark"])
    if "tf32" in s:
        torch.backends.cuda.matmul.allow_tf32 = bool(s["tf32"])
        torch.backends.cudnn.allow_tf32 = bool(s["tf32"])
    if s.get("autocast") and torch.cuda.is_available():
        # The main thread's CUDA ops from here on, as `with torch.autocast(...)` around the whole script;
        # without the cast cache, which would keep casts of weights the optimizer has since changed.
        dtype = getattr(torch, s["autocast"])
        torch.autocast("cuda", dtype=dtype, cache_enabled=False).__enter__()


def _record_losses(torch):
    """Keeps the scalar each backward() starts from, detached, on its device: no sync per step."""
    global _losses
    _losses = []
    backward = torch.Tensor.backward

    def recorded(self, *args, **kwargs):
        if self.numel() == 1 and os.getpid() == _pid:
            _losses.append(self.detach().reshape(()).float())
            if len(_losses) > 2 * MAX_LOSSES:
                del _losses[:MAX_LOSSES]
        return backward(self, *args, **kwargs)

    recorded.__wrapped__ = backward
    recorded.__doc__ = backward.__doc__
    torch.Tensor.backward = recorded
    atexit.register(send_losses)


def send_losses():
    """The recorded losses, once (one sync, at the trial's end)."""
    global _losses
    if not _losses or os.getpid() != _pid:
        return
    import torch
    values = torch.stack(_losses[-MAX_LOSSES:]).cpu().tolist()
    _losses = None
    # Sent once, at the end: worth half a second's wait if baton's queue is full for a moment.
    # (JSON has no NaN: a loss that is not finite goes as null, which baton reads as NaN.)
    values = [float("%.6g" % v) if math.isfinite(v) else None for v in values]
    _events.sender().send({"type": "losses", "values": values}, patience=0.5)


def step_ended():
    """Called at each step's end (baton/torch.py): a trial that has its steps ends here."""
    if _stop is not None and os.path.exists(_stop) and os.getpid() == _pid:
        send_losses()
        raise SystemExit(0)


def install(torch):
    global _settings, _stop, _live
    text = os.environ.get(TUNE)
    if text:
        try:
            _settings = json.loads(text)
            if not isinstance(_settings, dict):
                raise ValueError("not a JSON object")
        except ValueError as e:
            _settings = {}
            print(f"baton: {TUNE} is not a JSON object of settings ({e}): nothing tuned", file=sys.stderr)
    _patch_loader(torch)
    if _settings:
        _apply_process(torch)
    _stop = os.environ.get(STOP) or None
    _live = os.environ.get(LIVE) or None
    if os.environ.get(LOSSES) == "1":
        _record_losses(torch)
