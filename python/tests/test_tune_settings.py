"""What `baton tune` and `baton run --tuned` set in the training process (baton/_tune.py), against a real
Unix datagram socket standing in for baton (Debian's python3-torch, CPU)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from test_hook import PACKAGE, Receiver

PRELUDE = """
import sys, time, torch
from baton import _auto
_auto.install(torch)
from torch.utils.data import DataLoader, BatchSampler, SequentialSampler
data = [torch.randn(8) for _ in range(64)]
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def train(loader, steps=None):
    n = 0
    for x in loader:
        opt.zero_grad(); model(x).pow(2).mean().backward(); opt.step()
        n += 1
        if steps is not None and n == steps:
            break
    return n
"""


def run(body, env_extra, events=True):
    r = Receiver() if events else None
    env = dict(os.environ, PYTHONPATH=PACKAGE)
    for k in list(env):
        if k.startswith("BATON_"):
            del env[k]
    if r:
        env["BATON_EVENTS"] = r.path
    env.update(env_extra)
    try:
        p = subprocess.run([sys.executable, "-c", PRELUDE + body], env=env, capture_output=True, text=True,
                           timeout=120)
        got = r.events() if r else []
    finally:
        if r:
            r.close()
    return p, got


class TuneSettingsTest(unittest.TestCase):
    def test_every_dataloader_gets_the_tuned_workers(self):
        p, _ = run("""
a = DataLoader(data, batch_size=4)
b = DataLoader(data, 4, False, num_workers=1, prefetch_factor=2)
print(a.num_workers, a.persistent_workers, a.prefetch_factor, b.num_workers, b.prefetch_factor, a.batch_size)
print(train(a, 3))
""", {"BATON_TUNE": json.dumps({"num_workers": 2, "persistent_workers": True, "prefetch_factor": 4})})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split("\n")[0], "2 True 4 2 4 4")
        self.assertEqual(p.stdout.split("\n")[1], "3")

    def test_no_workers_keeps_a_valid_loader_and_the_batch_size_only_where_it_batches(self):
        p, _ = run("""
a = DataLoader(data, batch_size=4, num_workers=2, persistent_workers=True, prefetch_factor=4)
b = DataLoader(data, batch_sampler=BatchSampler(SequentialSampler(data), 4, False))
c = DataLoader(data, batch_size=None)
print(a.num_workers, a.persistent_workers, a.batch_size, b.batch_size, c.batch_size, next(iter(a)).shape[0])
""", {"BATON_TUNE": json.dumps({"num_workers": 0, "batch_size": 16})})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "0 False 16 None None 16")

    def test_threads_and_a_malformed_setting(self):
        p, _ = run("print(torch.get_num_threads())", {"BATON_TUNE": json.dumps({"threads": 1})})
        self.assertEqual(p.stdout.strip(), "1", p.stderr)
        p, _ = run("print(DataLoader(data).num_workers)", {"BATON_TUNE": "[1, 2]"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "0")
        self.assertEqual(p.stderr.count("BATON_TUNE is not a JSON object"), 1, p.stderr)

    def test_the_facts_of_the_training_loader_and_the_process_are_sent_once(self):
        p, events = run("""
DataLoader(data, batch_size=8)            # made, never trained on
train(DataLoader(data, batch_size=4, num_workers=1), 5)
train(DataLoader(data, batch_size=2), 5)
""", {})
        self.assertEqual(p.returncode, 0, p.stderr)
        loaders = [e for e in events if e["type"] == "loader"]
        processes = [e for e in events if e["type"] == "process"]
        self.assertEqual(len(loaders), 1, loaders)
        self.assertEqual((loaders[0]["num_workers"], loaders[0]["batch_size"], loaders[0]["batches"]), (1, 4, 16))
        self.assertEqual(loaders[0]["prefetch_factor"], 2)
        self.assertEqual(len(processes), 1)
        self.assertFalse(processes[0]["cuda"])
        self.assertGreaterEqual(processes[0]["threads"], 1)

    def test_a_trial_ends_at_a_step_once_baton_says_so_and_sends_its_losses(self):
        stop = os.path.join(tempfile.mkdtemp(), "stop")
        p, events = run(f"""
loader = DataLoader(data, batch_size=4)
n = 0
for epoch in range(100):
    for x in loader:
        loss = model(x).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        n += 1
        if n == 3:
            open({stop!r}, "w").close()   # what baton does once it has its steps
print("never here")
""", {"BATON_TRIAL_STOP": stop, "BATON_TRIAL_LOSSES": "1"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("never here", p.stdout)
        steps = [e for e in events if e["type"] == "step"]
        self.assertEqual(len(steps), 4)  # the step after it appeared is the last
        losses = [e for e in events if e["type"] == "losses"]
        self.assertEqual(len(losses), 1)
        self.assertEqual(len(losses[0]["values"]), 4)
        self.assertTrue(all(v >= 0 for v in losses[0]["values"]))


if __name__ == "__main__":
    unittest.main()
