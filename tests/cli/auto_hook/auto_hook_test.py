"""Steps with no change to the script, end to end: the real binary runs tests/cli/auto_hook/loops.py
(Debian's python3-torch on the CPU, no baton import) under `baton run`, `baton launch` and Debian's
torchrun, and what baton stored is compared with what the script says it did.

Usage: auto_hook_test.py BATON [unittest args, e.g. AutoHookTest.test_x]"""
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import unittest

BATON = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
LOOPS = os.path.join(HERE, "loops.py")
PYTHON = "/usr/bin/python3"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AutoHookTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="baton-auto-hook-test-")
        self.dir = self.tmp.name
        self.runs = 0

    def tearDown(self):
        self.tmp.cleanup()

    def baton(self, args, command, env=None):
        """`baton ARGS -- COMMAND` with its own database; returns (process, summary JSON, steps rows)."""
        self.runs += 1
        db = os.path.join(self.dir, f"{self.runs}.db")
        summary = os.path.join(self.dir, f"{self.runs}.json")
        e = {k: v for k, v in os.environ.items() if not k.startswith("BATON_") and k != "PYTHONPATH"}
        e.update(env or {})
        p = subprocess.run([BATON, "--config", "/dev/null"] + args + ["--no-gpus", "--db", db, "--summary-json",
                                                                      summary, "--"] + command,
                           env=e, cwd=self.dir, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
        with open(summary) as f:
            s = json.load(f)
        with sqlite3.connect(db) as c:
            rows = c.execute("SELECT rank, step, step_ms, wait_ms, samples FROM steps ORDER BY t_ms").fetchall()
        return p, s, rows

    def run_loop(self, mode, *extra, args=None):
        p, s, rows = self.baton(["run"] + (args or []), [PYTHON, LOOPS, mode] + list(extra))
        self.assertEqual(p.returncode, 0, p.stderr)
        return p, s, rows

    def said_steps(self, p):
        return int(p.stdout.split("steps ")[-1].split()[0])

    def test_every_loop_shape_counts_its_optimizer_steps(self):
        # (mode, samples per step): what the script's own count and its batches say.
        for mode, samples in [("plain", 4), ("accumulate", 16), ("gan", 4), ("wgan", 4), ("iterable", 4),
                              ("scaler", 4)]:
            with self.subTest(mode=mode):
                p, s, rows = self.run_loop(mode)
                self.assertEqual(len(rows), self.said_steps(p), p.stderr)
                self.assertEqual(s["steps"]["count"], len(rows))
                self.assertEqual(s["steps"]["source"], "auto")
                self.assertEqual({r[4] for r in rows}, {samples}, rows)
                self.assertEqual([r[1] for r in rows], list(range(len(rows))))  # numbered once each
                self.assertIn("steps (optimizer steps, no code change): ", p.stderr)
                # The dataset sleeps 3 ms per sample: the loop waits for its data most of the time.
                self.assertGreater(s["steps"]["data_wait_percent"], 60, p.stderr)
                # PyTorch says nothing about the patched optimizer (an LR scheduler checks the order of calls).
                self.assertNotIn("lr_scheduler.step()", p.stderr)

    def test_an_evaluation_pass_is_neither_data_wait_nor_step_time(self):
        p, s, rows = self.run_loop("eval")
        self.assertEqual(len(rows), 32, p.stderr)
        # Each validation pass takes about 0.3 s (8 batches of 4 samples of 10 ms) and one breaks off
        # after 3 batches; a training step takes about 13 ms. A step that held a pass would show it.
        self.assertLess(max(r[2] for r in rows), 150, rows)
        self.assertEqual({r[4] for r in rows}, {4})

    def test_more_workers_cut_the_data_wait(self):
        _, alone, _ = self.run_loop("plain", "0")
        _, helped, _ = self.run_loop("plain", "2")
        self.assertLess(helped["steps"]["data_wait_percent"], alone["steps"]["data_wait_percent"])
        self.assertGreater(helped["steps"]["samples_per_second"], alone["steps"]["samples_per_second"])

    def test_the_scripts_own_hook_wins_and_nothing_is_counted_twice(self):
        p, s, rows = self.run_loop("explicit")
        self.assertEqual(len(rows), 16, p.stderr)
        self.assertEqual(s["steps"]["source"], "hook")
        self.assertIn("steps (baton hook): 16,", p.stderr)
        # The hook the script imported is the one baton carries (no package installed here).
        self.assertNotIn("No module named", p.stderr)

    def test_a_script_that_never_steps_is_said_once(self):
        p, s, rows = self.run_loop("inference")
        self.assertEqual(rows, [])
        self.assertNotIn("steps", s)
        self.assertEqual(p.stderr.count("no optimizer stepped"), 1, p.stderr)

    def test_no_auto_hook_turns_it_off(self):
        p, s, rows = self.run_loop("plain", args=["--no-auto-hook"])
        self.assertEqual(rows, [])
        self.assertNotIn("no optimizer stepped", p.stderr)
        # The script's own hook still works.
        p, s, rows = self.run_loop("explicit", args=["--no-auto-hook"])
        self.assertEqual(len(rows), 16, p.stderr)

    def test_ranks_started_by_torchrun_and_by_baton_launch(self):
        port = str(free_port())
        # Debian's torchrun (1.13) needs -r/-t with --log_dir to start its workers.
        p, s, rows = self.baton(["run"], ["/usr/bin/torchrun", "--nproc_per_node", "2", "--master_port", port, "-r",
                                          "1", "-t", "1", "--log_dir", os.path.join(self.dir, "logs"), LOOPS, "plain"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted({r[0] for r in rows}), [0, 1], p.stderr)
        self.assertEqual(len(rows), 64)
        self.assertIn("over 2 ranks", p.stderr)
        p, s, rows = self.baton(["launch", "--nproc-per-node", "2", "--python", PYTHON], [LOOPS, "plain"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted({r[0] for r in rows}), [0, 1], p.stderr)
        self.assertEqual(len(rows), 64)

    def test_a_user_sitecustomize_still_runs_and_python_minus_e_skips_the_hook(self):
        site = os.path.join(self.dir, "site")
        os.mkdir(site)
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write("import sys\nprint('user sitecustomize', file=sys.stderr)\n")
        p, s, rows = self.baton(["run"], [PYTHON, LOOPS, "gan"], env={"PYTHONPATH": site})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("user sitecustomize", p.stderr)
        self.assertEqual(len(rows), 16)
        p, s, rows = self.baton(["run"], [PYTHON, "-E", LOOPS, "gan"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(rows, [])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
