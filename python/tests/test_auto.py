"""The automatic step hook (baton/_auto.py) against a real Unix datagram socket standing in for `baton
run` (Debian's python3-torch, CPU). Each script installs it as the shim does once torch is imported.
Run: python3 -m unittest discover -s python/tests (the repository's python/ on PYTHONPATH)."""
import unittest

from test_hook import Receiver, run_script

PRELUDE = """
import sys, time, torch
from baton import _auto
_auto.install(torch)
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __init__(self, n, seconds):
        self.n, self.seconds = n, seconds
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        time.sleep(self.seconds)
        return torch.randn(8)

model = torch.nn.Linear(8, 1)
def loss_of(x):
    return model(x).pow(2).mean()
"""


class AutoHookTest(unittest.TestCase):
    def run_events(self, body, env_extra=None):
        r = Receiver()
        try:
            p = run_script(PRELUDE + body, r.path)
            self.assertEqual(p.returncode, 0, p.stderr)
            events = r.events()
        finally:
            r.close()
        return p, [e for e in events if e["type"] == "step"], [e for e in events if e["type"] == "hook"]

    def test_outside_baton_run_nothing_is_sent_and_batches_pass_unchanged(self):
        p = run_script(PRELUDE + """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
seen = 0
for x in DataLoader(list(range(10)), batch_size=5):
    assert x.tolist() in ([0, 1, 2, 3, 4], [5, 6, 7, 8, 9]), x
    seen += 1
print("batches", seen)
""")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("batches 2", p.stdout)
        self.assertEqual(p.stderr, "")  # says nothing: only the script's own watch() would

    def test_a_hook_event_once_and_auto_steps(self):
        _, steps, hooks = self.run_events("""
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(Slow(12, 0.002), batch_size=4):
    opt.zero_grad(); loss_of(x).backward(); opt.step()
""")
        self.assertEqual(len(hooks), 1)
        self.assertEqual(hooks[0]["mode"], "auto")
        self.assertEqual([s["step"] for s in steps], [0, 1, 2])
        self.assertTrue(all(s["auto"] for s in steps))
        self.assertEqual([s["samples"] for s in steps], [4, 4, 4])
        for s in steps:  # each batch waited 4 x 2 ms in the loader
            self.assertGreater(s["wait_ms"], 7)
            self.assertLessEqual(s["wait_ms"], s["step_ms"])

    def test_an_evaluation_pass_inside_a_step_is_taken_out(self):
        _, steps, _ = self.run_events("""
opt = torch.optim.SGD(model.parameters(), lr=0.1)
val = DataLoader(Slow(8, 0.025), batch_size=4)  # 0.2 s a pass
for i, x in enumerate(DataLoader(Slow(8, 0.001), batch_size=4)):
    if i == 1:
        with torch.no_grad():
            for v in val:
                model(v)
    opt.zero_grad(); loss_of(x).backward(); opt.step()
""")
        self.assertEqual(len(steps), 2)
        self.assertLess(steps[1]["step_ms"], 100, steps)  # the pass (200 ms) is not in it
        self.assertLess(steps[1]["wait_ms"], 50, steps)
        self.assertEqual(steps[1]["samples"], 4)

    def test_a_step_inside_a_step_counts_once(self):
        _, steps, _ = self.run_events("""
class Wrapped(torch.optim.SGD):
    def step(self, closure=None):
        return super().step(closure)   # the parent's step is wrapped too
inner = torch.optim.SGD(model.parameters(), lr=0.1)
class Outer(torch.optim.Optimizer):  # an optimizer that steps another, as accelerate's does
    def __init__(self, inner):
        super().__init__(model.parameters(), {})
        self.inner = inner
    def step(self, closure=None):
        self.inner.step()
opt = Wrapped(model.parameters(), lr=0.1)
torch.optim.SGD(model.parameters(), lr=0.1)  # SGD's step is wrapped once, whatever the order
for x in DataLoader(Slow(8, 0.001), batch_size=2):
    opt.zero_grad(); loss_of(x).backward(); opt.step()
del opt  # (an optimizer still alive paces until another has stepped twice since its last step)
outer = Outer(inner)
for x in DataLoader(Slow(8, 0.001), batch_size=2):
    outer.zero_grad(); loss_of(x).backward(); outer.step()
""")
        self.assertEqual(len(steps), 8, steps)

    def test_a_new_optimizer_paces_once_the_old_one_is_gone(self):
        _, steps, _ = self.run_events("""
for phase in range(2):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)   # the first one is dropped here
    for x in DataLoader(Slow(8, 0.001), batch_size=2):
        opt.zero_grad(); loss_of(x).backward(); opt.step()
""")
        self.assertEqual(len(steps), 8, steps)

    def test_the_explicit_hook_takes_over_without_counting_twice(self):
        _, steps, _ = self.run_events("""
import baton.torch
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(Slow(12, 0.001), batch_size=4):
    opt.zero_grad(); loss_of(x).backward(); opt.step()
for x in baton.torch.watch(DataLoader(Slow(12, 0.001), batch_size=4)):
    opt.zero_grad(); loss_of(x).backward(); opt.step()
""")
        self.assertEqual([s["step"] for s in steps], [0, 1, 2, 3, 4, 5])
        self.assertEqual([bool(s.get("auto")) for s in steps], [True] * 3 + [False] * 3)

    def test_without_a_loader_the_first_step_begins_the_clock(self):
        _, steps, _ = self.run_events("""
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8)
for _ in range(5):
    opt.zero_grad(); loss_of(x).backward(); opt.step()
""")
        self.assertEqual(len(steps), 4)
        self.assertTrue(all(s["wait_ms"] == 0 and "samples" not in s for s in steps))

    def test_baton_auto_hook_0_installs_nothing(self):
        import os
        os.environ["BATON_AUTO_HOOK"] = "0"
        try:
            _, steps, hooks = self.run_events("""
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in DataLoader(Slow(8, 0.001), batch_size=4):
    opt.zero_grad(); loss_of(x).backward(); opt.step()
assert not getattr(torch.utils.data.dataloader._BaseDataLoaderIter.__next__, "_baton_patched", False)
""")
        finally:
            del os.environ["BATON_AUTO_HOOK"]
        self.assertEqual((steps, hooks), ([], []))


if __name__ == "__main__":
    unittest.main()
