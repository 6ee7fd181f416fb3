"""The profiler window of `baton run --profile` (baton/_profile.py) against a real socket standing in
for baton run, with Debian's python3-torch (legacy profiler, CPU): the window opens after the warm-up,
records its steps with ProfilerStep marks and each operator's "Call stack", writes a gzipped trace and
sends its path once; no window without the variables; a loop that ends inside the window exits
(the profiler stopped at exit) and writes nothing."""
import gzip
import json
import os
import shutil
import tempfile
import unittest

from test_hook import Receiver, run_script

LOOP = """
import time, torch
import baton.torch
from torch.utils.data import DataLoader, Dataset
class Slow(Dataset):
    def __len__(self): return 80
    def __getitem__(self, i):
        time.sleep(0.001)
        return torch.ones(8), i
m = torch.nn.Linear(8, 8)
def train_step(x):
    loss = m(x).sum()
    loss.backward()
    return loss.item()
for x, y in baton.torch.watch(DataLoader(Slow(), batch_size=4)):
    train_step(x)
print("ok")
"""


class ProfileWindowTest(unittest.TestCase):
    def run_loop(self, env):
        r = Receiver()
        out = tempfile.mkdtemp()
        try:
            for k, v in env.items():
                os.environ[k] = v.replace("{dir}", out)
            p = run_script(LOOP, r.path, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.strip(), "ok")
            return p, r.events(), out, sorted(os.listdir(out))
        finally:
            for k in env:
                os.environ.pop(k, None)
            r.close()

    def test_the_window_records_its_steps_after_the_warm_up(self):
        p, events, out, files = self.run_loop(
            {"BATON_PROFILE_DIR": "{dir}", "BATON_PROFILE_WARMUP": "4", "BATON_PROFILE_STEPS": "3"})
        try:
            profiles = [e for e in events if e["type"] == "profile"]
            self.assertEqual(len(profiles), 1, events)
            e = profiles[0]
            self.assertEqual(e["steps"], 3)
            self.assertEqual(e["rank"], 0)
            self.assertEqual(os.path.dirname(e["path"]), out)
            self.assertEqual(files, [os.path.basename(e["path"])], "only the gzipped trace is left")
            self.assertTrue(e["path"].endswith(".json.gz"))
            with gzip.open(e["path"]) as f:
                trace = json.load(f)
            events_ = trace if isinstance(trace, list) else trace["traceEvents"]
            marks = sorted(ev["name"] for ev in events_ if ev["name"].startswith("ProfilerStep#"))
            self.assertEqual(len(marks), 3, marks)
            stacks = [ev["args"]["Call stack"] for ev in events_
                      if ev["name"] == "aten::item" and "Call stack" in ev.get("args", {})]
            self.assertTrue(stacks, "the scalar read has its stack")
            self.assertIn("train_step", stacks[0])
            # The steps go on being reported around the window (the receiver reads at the end: the
            # kernel keeps 10 datagrams, so the profile's, sent after step 8, is among them).
            self.assertGreaterEqual(len([x for x in events if x["type"] == "step"]), 8)
        finally:
            shutil.rmtree(out)

    def test_auto_waits_for_its_trigger(self):
        # --profile=auto: no warm-up of its own, the window starts once the trigger file is there.
        trigger = tempfile.mktemp()
        env = {"BATON_PROFILE_DIR": "{dir}", "BATON_PROFILE_WARMUP": "0", "BATON_PROFILE_STEPS": "3",
               "BATON_PROFILE_TRIGGER": trigger}
        p, events, out, files = self.run_loop(env)
        try:
            self.assertEqual([e for e in events if e["type"] == "profile"], [], "no trigger, no window")
        finally:
            shutil.rmtree(out)
        open(trigger, "w").close()
        try:
            p, events, out, files = self.run_loop(env)
            try:
                self.assertEqual(len([e for e in events if e["type"] == "profile"]), 1, events)
            finally:
                shutil.rmtree(out)
        finally:
            os.unlink(trigger)

    def test_no_variables_no_window(self):
        p, events, out, files = self.run_loop({})
        try:
            self.assertEqual([e for e in events if e["type"] == "profile"], [])
            self.assertEqual(files, [])
        finally:
            shutil.rmtree(out)

    def test_a_loop_that_ends_inside_the_window_exits_and_writes_nothing(self):
        # The profiler starts at step 15 of 20 and would need 11 steps: it is stopped at exit (a
        # stack tracer left running made Debian's PyTorch hang in its exit).
        p, events, out, files = self.run_loop(
            {"BATON_PROFILE_DIR": "{dir}", "BATON_PROFILE_WARMUP": "15", "BATON_PROFILE_STEPS": "10"})
        try:
            self.assertEqual([e for e in events if e["type"] == "profile"], [])
            self.assertEqual(files, [])
        finally:
            shutil.rmtree(out)

    def test_a_loop_shorter_than_the_window_records_nothing_and_says_nothing(self):
        p, events, out, files = self.run_loop(
            {"BATON_PROFILE_DIR": "{dir}", "BATON_PROFILE_WARMUP": "30", "BATON_PROFILE_STEPS": "5"})
        try:
            self.assertEqual([e for e in events if e["type"] == "profile"], [])
            self.assertEqual(p.stderr, "")
        finally:
            shutil.rmtree(out)


if __name__ == "__main__":
    unittest.main()
