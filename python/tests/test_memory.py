"""The hook's CUDA memory recorder (baton/_memory.py) on a CPU-only PyTorch: torch.cuda's functions are
replaced by a fake allocator (fake_cuda_memory.py) that reports the script's CPU tensors as its blocks
and, like the caching allocator when cudaMalloc fails, calls the out-of-memory observer and raises
torch.cuda.OutOfMemoryError with PyTorch's text; oom_train.py runs out of it in step 3. The per-step figures ride along the steps; the
capture is written before the error unwinds, with the phase, the stack, the tensors found and the
snapshot; without the observer (PyTorch 1.x) the uncaught error is captured; --memory-history asks
PyTorch for its record; the OOMs find_batch_size provokes are not captured."""
import json
import os
import shutil
import tempfile
import unittest

from test_hook import Receiver, run_script

HERE = os.path.dirname(os.path.abspath(__file__))
# oom_train.py run as __main__ (its traceback's frames are the script's), with or without the observer.
TRAIN = f"import runpy; runpy.run_path({os.path.join(HERE, 'oom_train.py')!r}, run_name='__main__')"
TRAIN_WITHOUT_OBSERVER = "import sys; sys.argv.append('--no-observer'); " + TRAIN


class MemoryRecorderTest(unittest.TestCase):
    def run_script_with(self, code, env):
        r = Receiver()
        out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, out)
        try:
            for k, v in env.items():
                os.environ[k] = v.replace("{dir}", out)
            p = run_script(f"import sys; sys.path.insert(0, {HERE!r})\n" + code, r.path, timeout=120)
            return p, r.events(), out
        finally:
            for k in env:
                os.environ.pop(k, None)
            r.close()

    def capture_of(self, events, out):
        ooms = [e for e in events if e["type"] == "oom"]
        self.assertEqual(len(ooms), 1, events)
        self.assertEqual(os.path.dirname(ooms[0]["path"]), out)
        self.assertEqual(ooms[0]["rank"], 0)
        with open(ooms[0]["path"]) as f:
            return json.load(f)

    def test_each_step_carries_the_allocators_figures(self):
        p, events, out = self.run_script_with(TRAIN, {"BATON_MEMORY_DIR": "{dir}"})
        steps = [e for e in events if e["type"] == "step"]
        # Five steps ended before the failure (batches of 4 to 64); the failed one is not a step.
        self.assertEqual([e["samples"] for e in steps], [4, 8, 16, 32, 64], p.stderr)
        for e in steps:  # every step, not every 50th
            cuda = e["data"]["cuda"]
            self.assertEqual(cuda["device"], 0)
            self.assertEqual(cuda["total_bytes"], 2 << 20)
            self.assertEqual(cuda["allocated_bytes"], 288)  # the model: the step's activations are freed
            # The step's own peak (the peaks are reset at each step's end): its two layers' outputs.
            self.assertEqual(cuda["peak_allocated_bytes"], 288 + 2 * e["samples"] * 8192)
            for key in ("reserved_bytes", "active_bytes", "inactive_split_bytes", "num_ooms", "num_alloc_retries"):
                self.assertIn(key, cuda)

    def test_an_oom_is_captured_before_it_unwinds(self):
        p, events, out = self.run_script_with(TRAIN, {"BATON_MEMORY_DIR": "{dir}"})
        self.assertEqual(p.returncode, 1)
        self.assertIn("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 MiB", p.stderr)
        c = self.capture_of(events, out)
        self.assertEqual(c["baton_oom_capture"], 1)
        self.assertEqual(c["device"], 0)
        self.assertEqual(c["step"], 5)
        self.assertEqual(c["batch_size"], 128)
        self.assertEqual(c["phase"], "forward")
        self.assertEqual(c["requested_bytes"], 128 * 8192)
        self.assertEqual(c["device_total_bytes"], 2 << 20)
        blocks = [b for s in c["snapshot"]["segments"] for b in s["blocks"]]
        self.assertEqual(c["device_free_bytes"], (2 << 20) - sum(b["size"] for b in blocks) - (64 << 10))
        self.assertFalse(c["history"])
        self.assertFalse(c["autocast"])
        # The stack, innermost first, without the hook's own frames: the fake allocator, then Layer.forward.
        self.assertEqual([f["name"] for f in c["stack"][:3]], ["fake_alloc", "alloc", "forward"])
        self.assertTrue(c["stack"][2]["filename"].endswith("oom_train.py"))
        self.assertFalse(any(f["filename"].endswith("baton/_memory.py") for f in c["stack"]))
        # The tensors found: the Linear's weight and bias, their gradients, Adam's state for each (its
        # two moments and, in PyTorch 1.13, its step count: a tensor too).
        self.assertEqual(len(c["tensors"]["parameters"]), 2)
        self.assertEqual(len(c["tensors"]["gradients"]), 2)
        self.assertEqual(len(c["tensors"]["optimizer_state"]), 6)
        weight = c["tensors"]["parameters"][0]
        self.assertIn(weight[0], [b["address"] for b in blocks])
        self.assertEqual(c["stats"]["allocated_bytes"], sum(b["size"] for b in blocks))
        self.assertEqual(c["snapshot"]["device_traces"], [[]])  # no history asked
        self.assertEqual(len(os.listdir(out)), 1)  # the capture, no temporary left

    def test_without_the_observer_the_uncaught_error_is_captured(self):
        p, events, out = self.run_script_with(TRAIN_WITHOUT_OBSERVER, {"BATON_MEMORY_DIR": "{dir}"})
        self.assertEqual(p.returncode, 1)
        self.assertIn("OutOfMemoryError", p.stderr)  # the traceback still printed, by the previous hook
        c = self.capture_of(events, out)
        self.assertEqual(c["requested_bytes"], 128 * 8192)  # read from the message
        self.assertTrue(c["message"].startswith("CUDA out of memory. Tried to allocate 1.00 MiB"))
        self.assertEqual(c["phase"], "forward")
        self.assertEqual(c["stack"][0]["name"], "fake_alloc")

    def test_memory_history_is_asked_of_pytorch_and_its_newest_events_kept(self):
        p, events, out = self.run_script_with(TRAIN, {"BATON_MEMORY_DIR": "{dir}", "BATON_MEMORY_HISTORY": "100"})
        self.assertIn("history: [('context', 'all'), ('enabled', 'all'), ('max_entries', 100), ('stacks', 'python')]",
                      p.stdout)
        c = self.capture_of(events, out)
        self.assertTrue(c["history"])
        traces = c["snapshot"]["device_traces"][0]
        self.assertEqual(len(traces), 100)
        self.assertEqual(traces[-1]["addr"], 299)  # the newest
        self.assertEqual(traces[0]["frames"][0]["filename"], "x.py")

    def test_no_capture_without_baton_run_or_for_find_batch_size(self):
        p, events, out = self.run_script_with(TRAIN, {})
        self.assertEqual(p.returncode, 1)
        self.assertEqual([e for e in events if e["type"] == "oom"], [])
        finder = r"""
import torch
import fake_cuda_memory as fake
fake.install()
import baton.torch
from torch.utils.data import DataLoader, TensorDataset
for _ in baton.torch.watch(DataLoader(TensorDataset(torch.ones(8, 2)), batch_size=4)):
    pass  # arms the recorder
def step(size):
    if size > 8:
        fake.fake_alloc(size << 20)
print(baton.torch.find_batch_size(step, start=2, max_size=64, device=torch.device("cpu"), quiet=True)["largest_fitting"])
"""
        p, events, out = self.run_script_with(finder, {"BATON_MEMORY_DIR": "{dir}"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "8")
        self.assertEqual([e for e in events if e["type"] == "oom"], [])
        self.assertEqual(os.listdir(out), [])


if __name__ == "__main__":
    unittest.main()
