"""tune_loader and find_batch_size on the CPU (Debian's python3-torch): the loader tuner picks
workers for a slow dataset and its speed-up holds when measured again; the batch-size finder
finds a hidden OOM limit, answers within the best band, and keeps nothing of failed tries."""
import gc
import os
import subprocess
import sys
import time
import unittest
import weakref

import torch
from torch.utils.data import DataLoader, Dataset

import baton.torch as bt
from baton import tuners

HERE = os.path.dirname(os.path.abspath(__file__))


class Slow(Dataset):
    """5 ms of (sleeping) work per sample: a slow disk or decoder."""

    def __len__(self):
        return 100000

    def __getitem__(self, i):
        time.sleep(0.005)
        return torch.zeros(4)


def slow_dataset():  # for python -m baton tune-loader tests.test_tuners:slow_dataset
    return Slow()


def measure(loader, seconds):
    it = iter(loader)
    next(it)
    start, n = time.perf_counter(), 0
    for _ in it:
        n += 1
        if time.perf_counter() - start >= seconds:
            break
    return n / (time.perf_counter() - start)


class TuneLoaderTest(unittest.TestCase):
    def test_slow_dataset_gets_workers_and_the_speed_up_is_real(self):
        best = bt.tune_loader(Slow(), batch_size=8, budget_s=6, quiet=True)
        self.assertGreater(best["num_workers"], 0)
        self.assertTrue(best["persistent_workers"])
        self.assertIn(best["prefetch_factor"], (2, 4))
        # Measured again, apart from the tuner: the chosen settings beat num_workers=0 clearly
        # (sleeping workers overlap even on 2 cores).
        base = measure(DataLoader(Slow(), batch_size=8), 1.5)
        tuned = measure(DataLoader(Slow(), batch_size=8, **best), 1.5)
        self.assertGreater(tuned, 1.5 * base, (best, base, tuned))

    def test_command_line(self):
        p = subprocess.run([sys.executable, "-m", "baton", "tune-loader", "test_tuners:slow_dataset",
                            "--batch-size", "8", "--budget", "3", "--max-workers", "2"],
                           capture_output=True, text=True, timeout=120, cwd=HERE,
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(HERE)))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("batches/s", p.stderr)
        self.assertIn("<- best", p.stderr)
        self.assertRegex(p.stdout, r"^DataLoader\(dataset, batch_size=8, num_workers=[12], pin_memory=False, "
                                   r"persistent_workers=True, prefetch_factor=[24]\)$")
        bad = subprocess.run([sys.executable, "-m", "baton", "tune-loader", "nonexistent_module:f", "--batch-size",
                              "8"], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, PYTHONPATH=os.path.dirname(HERE)))
        self.assertEqual(bad.returncode, 2)
        self.assertIn("cannot load nonexistent_module:f", bad.stderr)


class FindBatchSizeTest(unittest.TestCase):
    def step_with_limit(self, limit, alive):
        def step(n):
            activations = torch.empty(n * 1024)  # what a real step would hold while it runs
            alive.append(weakref.ref(activations))
            if n > limit:
                raise RuntimeError(f"CUDA out of memory. Tried to allocate {n} MiB")  # PyTorch's 1.x wording
            return activations.sum()
        return step

    def test_finds_the_hidden_limit_and_answers_within_the_band(self):
        for limit in (1, 37, 100, 1000):
            alive = []
            r = bt.find_batch_size(self.step_with_limit(limit, alive), quiet=True, device=torch.device("cpu"))
            self.assertEqual(r["largest_fitting"], limit)
            self.assertEqual(r["first_oom"], limit + 1)
            self.assertGreaterEqual(r["batch_size"], max(1, int(0.60 * limit)), r)
            self.assertLessEqual(r["batch_size"], max(1, int(0.85 * limit)), r)
            gc.collect()
            self.assertEqual([ref for ref in alive if ref() is not None], [])  # nothing kept from any try

    def test_other_errors_pass_through(self):
        def broken(n):
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")
        with self.assertRaises(RuntimeError):
            bt.find_batch_size(broken, quiet=True, device=torch.device("cpu"))
        with self.assertRaisesRegex(RuntimeError, "even batch size 1 does not fit"):
            bt.find_batch_size(self.step_with_limit(0, []), start=4, quiet=True, device=torch.device("cpu"))
        # A start above the limit: halved down to a size that fits, then searched up again.
        r = bt.find_batch_size(self.step_with_limit(5, []), start=64, quiet=True, device=torch.device("cpu"))
        self.assertEqual(r["largest_fitting"], 5)

    def test_max_size_caps_the_search(self):
        r = bt.find_batch_size(self.step_with_limit(10**6, []), max_size=48, quiet=True, device=torch.device("cpu"))
        self.assertEqual(r["largest_fitting"], 48)
        self.assertIsNone(r["first_oom"])
        # Nothing ran out of memory: no limit to keep a margin from, so the largest size that ran
        # (it answered 217 of 256 before), and it says so.
        self.assertEqual(r["batch_size"], 48)
        self.assertFalse(r["limit_found"])
        p = subprocess.run([sys.executable, "-c",
                            "import torch, baton.torch as bt\n"
                            "r = bt.find_batch_size(lambda n: torch.ones(n).sum(), max_size=256, device=torch.device('cpu'))\n"
                            "print(r['batch_size'])\n"],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(HERE)))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "256\n")
        self.assertIn("nothing ran out of memory up to 256: no limit found", p.stderr)
        # With a limit found the margin stays.
        self.assertTrue(bt.find_batch_size(self.step_with_limit(100, []), quiet=True,
                                           device=torch.device("cpu"))["limit_found"])

    def test_oom_wording_of_torch_2(self):
        oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
        if oom_type is not None:
            self.assertTrue(tuners.is_oom(oom_type("CUDA out of memory.")))
        self.assertTrue(tuners.is_oom(RuntimeError(
            "[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
            "allocate 1099511627776 bytes. Error code 12 (Cannot allocate memory)")))
        self.assertFalse(tuners.is_oom(ValueError("out of memory")))


if __name__ == "__main__":
    unittest.main()
