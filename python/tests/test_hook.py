"""The hook against a real Unix datagram socket standing in for `baton run` (Debian's python3-torch,
CPU). Run: python3 -m unittest discover -s python/tests (the repository's python/ on PYTHONPATH)."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import torch
from torch.utils.data import DataLoader, TensorDataset

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)


def run_script(code, events_path=None, timeout=60, baton_version=None):
    """Runs `code` in a fresh interpreter (the hook keeps per-process state) with the package."""
    env = dict(os.environ, PYTHONPATH=PACKAGE)
    env.pop("BATON_EVENTS", None)
    env.pop("BATON_VERSION", None)
    if events_path:
        env["BATON_EVENTS"] = events_path
    if baton_version:
        env["BATON_VERSION"] = baton_version
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


class Receiver:
    """A bound datagram socket, as baton run has."""

    def __init__(self, rcvbuf=None):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "events")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.bind(self.path)
        self.sock.setblocking(False)

    def events(self):
        out = []
        while True:
            try:
                out.append(json.loads(self.sock.recv(65536)))
            except BlockingIOError:
                return out

    def close(self):
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


LOOP = """
import time, torch
import baton.torch
from torch.utils.data import DataLoader, Dataset
class Slow(Dataset):
    def __len__(self): return 40
    def __getitem__(self, i):
        time.sleep(0.005)
        return torch.ones(3), i
seen = []
for x, y in baton.torch.watch(DataLoader(Slow(), batch_size=4)):
    time.sleep(0.01)
    seen.extend(y.tolist())
assert seen == list(range(40)), seen
print("ok")
"""


class HookTest(unittest.TestCase):
    def steps_of(self, code):
        """Runs `code` against a receiver; returns the process and the step events it sent."""
        r = Receiver()
        try:
            p = run_script(code, r.path)
            self.assertEqual(p.returncode, 0, p.stderr)
            return p, [e for e in r.events() if e["type"] == "step"]
        finally:
            r.close()

    def test_steps_of_a_plain_loop(self):
        p, steps = self.steps_of(LOOP)
        self.assertEqual(p.stdout.strip(), "ok")
        self.assertEqual(p.stderr, "")  # under baton: no notice
        # 10 batches: 10 steps, numbered, each 4 samples, 20 ms of data wait (4 x 5 ms) in ~30 ms.
        self.assertEqual([e["step"] for e in steps], list(range(10)))
        for e in steps:
            self.assertEqual(e["samples"], 4)
            self.assertEqual(e["rank"], 0)
            self.assertEqual(e["dropped"], 0)
            self.assertGreater(e["pid"], 0)
            self.assertGreaterEqual(e["wait_ms"], 19.0)
            self.assertGreaterEqual(e["step_ms"], e["wait_ms"] + 9.0)
            self.assertLess(e["step_ms"], 500)
            self.assertLess(abs(e["t"] / 1000 - time.time()), 120)

    def test_steps_before_init_process_group_carry_the_launchers_rank(self):
        code = """
import os
os.environ["RANK"] = "3"
import baton.torch
for i in baton.torch.watch(range(3)):
    pass
"""
        steps = self.steps_of(code)[1]
        self.assertEqual([e["rank"] for e in steps], [3, 3, 3])

    def test_the_profiler_windows_own_time_is_no_step_and_no_data_wait(self):
        # A window whose stop and export take 0.4 s at the end of step 2 (as a real trace's can take
        # seconds): neither that step nor the next one's data wait counts it.
        code = """
import time, torch
import baton.torch
from baton import torch as hook
class SlowWindow:
    def step_ended(self, count):
        if count == 2:
            time.sleep(0.4)
hook._profile_window = SlowWindow()
for x in baton.torch.watch([torch.ones(2)] * 6):
    time.sleep(0.01)
print("ok")
"""
        p, steps = self.steps_of(code)
        self.assertEqual([e["step"] for e in steps], list(range(6)))
        for e in steps:
            self.assertLess(e["wait_ms"], 100, e)
            self.assertLess(e["step_ms"], 150, e)
            self.assertGreaterEqual(e["step_ms"], 9.0, e)

    def test_a_loop_that_breaks_still_reports_its_last_step(self):
        code = """
import baton.torch
for i in baton.torch.watch(range(100)):
    if i == 9:
        break
"""
        steps = self.steps_of(code)[1]
        self.assertEqual([e["step"] for e in steps], list(range(10)))

    def test_manual_steps_span_several_batches(self):
        code = """
import time, torch
import baton.torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.zeros(12, 2)), batch_size=2)
for i, (x,) in enumerate(baton.torch.watch(loader, manual_steps=True)):
    time.sleep(0.002)
    if (i + 1) % 3 == 0:
        baton.torch.step()
"""
        steps = self.steps_of(code)[1]
        # 6 batches, a step every 3: 2 steps of 6 samples each.
        self.assertEqual([e["step"] for e in steps], [0, 1])
        self.assertEqual([e["samples"] for e in steps], [6, 6])
        for e in steps:
            self.assertGreaterEqual(e["step_ms"], 5.0)

    def test_scaler_scale_rides_along(self):
        code = """
import torch, baton.torch
class Scaler:  # the GradScaler interface the hook reads
    def is_enabled(self): return True
    def get_scale(self): return 65536.0
for _ in baton.torch.watch([torch.zeros(2, 1)] * 3, scaler=Scaler()):
    pass
"""
        steps = self.steps_of(code)[1]
        self.assertEqual(len(steps), 3)
        self.assertEqual(steps[0]["data"]["scale"], 65536.0)

    def test_a_full_socket_never_blocks_and_drops_are_counted(self):
        code = """
import time, baton.torch
start = time.perf_counter()
for _ in baton.torch.watch(range(5000)):
    pass
took = time.perf_counter() - start
from baton import _events
s = _events.sender()
print(s.sent, s.dropped, round(took, 3))
"""
        r = Receiver(rcvbuf=4096)  # room for a handful of events; nobody reads
        try:
            p = run_script(code, r.path)
            self.assertEqual(p.returncode, 0, p.stderr)
            sent, dropped, took = p.stdout.split()
            events = r.events()
        finally:
            r.close()
        self.assertEqual(int(sent) + int(dropped), 5000)  # a step per batch
        self.assertGreater(int(dropped), 0)
        self.assertLess(float(took), 20.0)  # never waited for the reader
        # The drop count travels with events that got through.
        self.assertEqual(len(events), int(sent))

    def test_drops_after_the_last_event_that_got_through_are_said_at_exit(self):
        code = """
import baton.torch
for _ in baton.torch.watch(range(5000)):
    pass
from baton import _events
s = _events.sender()
print(s.sent, s.dropped, s.dropped_said, flush=True)
"""
        r = Receiver(rcvbuf=4096)  # full after a handful of events; read only once the loop is over
        env = dict(os.environ, PYTHONPATH=PACKAGE, BATON_EVENTS=r.path)
        env.pop("BATON_VERSION", None)
        try:
            with subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) as p:
                line = p.stdout.readline()  # the loop is over; the script exits next
                during = r.events()  # room in baton's queue again, as baton reading it
                err = p.communicate(timeout=30)[1]
            after = r.events()
        finally:
            r.close()
        self.assertEqual(p.returncode, 0, err)
        sent, dropped, said = map(int, line.split())
        self.assertGreater(dropped, said)  # the last steps were dropped: no event carried their count
        # The exit's event may come while the test drains the queue or after: it is the last either way.
        events = during + after
        self.assertEqual(len(events), sent + 1)
        self.assertEqual([e["type"] for e in events[-1:]], ["dropped"])
        self.assertEqual(events[-1]["dropped"], dropped)
        self.assertNotIn("dropped", [e["type"] for e in events[:-1]])

    def test_another_version_of_baton_is_said_once_with_both_versions(self):
        import baton
        r = Receiver()
        try:
            p = run_script(LOOP, r.path, baton_version="9.9.9")
            self.assertEqual(p.returncode, 0, p.stderr)
            lines = [l for l in p.stderr.splitlines() if "9.9.9" in l]
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertIn("baton " + baton.__version__, lines[0])
            self.assertEqual(len(r.events()), 10)  # the events go all the same
            same = run_script(LOOP, r.path, baton_version=baton.__version__)
            self.assertNotIn("install the same version", same.stderr)
        finally:
            r.close()

    def test_without_baton_batches_pass_and_one_notice(self):
        code = """
import torch, baton.torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.arange(10.0)), batch_size=5)
got = [x.tolist() for (x,) in baton.torch.watch(loader)]
got += [x.tolist() for (x,) in baton.torch.watch(loader)]
baton.torch.step()
print(got)
"""
        p = run_script(code)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), str([[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0, 9.0]] * 2))
        self.assertEqual(p.stderr.count("baton:"), 1, p.stderr)
        self.assertIn("not running under `baton run`", p.stderr)

    def test_batch_sizes_of_common_batch_shapes(self):
        import baton.torch as bt
        self.assertEqual(bt._batch_size(torch.zeros(7, 3)), 7)
        self.assertEqual(bt._batch_size((torch.zeros(5, 2), torch.zeros(5))), 5)
        self.assertEqual(bt._batch_size({"input_ids": torch.zeros(3, 9), "label": torch.zeros(3)}), 3)
        self.assertEqual(bt._batch_size([["a", "b"], torch.zeros(2)]), 2)
        self.assertIsNone(bt._batch_size("text"))
        self.assertIsNone(bt._batch_size(torch.tensor(1.0)))

    def test_watched_loader_keeps_the_loaders_attributes(self):
        import baton.torch as bt
        loader = DataLoader(TensorDataset(torch.zeros(10, 1)), batch_size=4)
        w = bt.watch(loader)
        self.assertEqual(len(w), 3)
        self.assertIs(w.dataset, loader.dataset)
        self.assertEqual(w.batch_size, 4)


if __name__ == "__main__":
    unittest.main()
