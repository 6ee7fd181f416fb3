"""Hung distributed jobs under `baton launch`, end to end with Debian's python3-torch (gloo on the
CPU): 4 ranks where rank 2 skips a collective, spins, blocks on a pipe, exits, or is frozen in the
kernel, each named for what it is (with and without the Python hook); the Flight Recorder's dumps
asked for by their pipes and judged; no verdict on a job that
evaluates on every rank, has a slow first step and a slow DataLoader start, and prints nothing;
on_hang = "stop" ends the launch with 124 and leaves no rank; `baton stacks` of a running launch and
its bad input.

Usage: hang_test.py BATON [unittest args, e.g. HangTest.test_x]"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from hang_helpers import SCRIPT, line_of, processes_with

BATON = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
REPO_PYTHON = os.path.join(HERE, "..", "..", "..", "python")
PYTHON = "/usr/bin/python3"
HANG = 10  # --hang-seconds of these tests (the default is the larger of 60 s and 10 median steps)


class HangTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="baton-hang-test-")
        self.dir = self.tmp.name
        self.err = os.path.join(self.dir, "stderr.txt")
        self.launcher = None

    def tearDown(self):
        if self.launcher and self.launcher.poll() is None:
            self.launcher.kill()
            self.launcher.wait(30)
        self.tmp.cleanup()

    def start(self, mode, on_hang="report", hook=False, hang=HANG, extra=(), db=None, env_extra=None):
        # The script runs from this test's directory (a copy), so leftovers are found by its path.
        script = os.path.join(self.dir, "hang_ranks.py")
        with open(SCRIPT) as src, open(script, "w") as dst:
            dst.write(src.read())
        env = dict(os.environ)
        if hook:
            env["PYTHONPATH"] = os.path.abspath(REPO_PYTHON)
        env.update(env_extra or {})
        cmd = [BATON, "launch", "--python", PYTHON, "--nproc-per-node", "4", "--log-dir",
               os.path.join(self.dir, "logs"), "--run-id", mode, "--hang-seconds", str(hang), "--on-hang", on_hang]
        cmd += ["--db", db] if db else ["--no-db"]
        cmd += [script, mode] + (["--hook"] if hook else []) + list(extra)
        self.script = script
        self.started = time.monotonic()
        with open(self.err, "w") as err:
            self.launcher = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=err)
        return self.launcher

    def stderr(self):
        with open(self.err) as f:
            return f.read()

    def wait_for(self, text, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if text in self.stderr():
                return time.monotonic() - self.started
            if self.launcher.poll() is not None:
                break
            time.sleep(0.2)
        self.fail(f"no {text!r} in {seconds} s; stderr:\n{self.stderr()}")

    def stop_and_check_nothing_is_left(self):
        self.launcher.send_signal(signal.SIGTERM)
        self.launcher.wait(60)
        self.assertEqual(processes_with(self.dir), [], "a rank outlived the launcher")

    def test_a_skipped_collective_is_a_desync_and_stop_exits_124(self):
        p = self.start("skip", on_hang="stop")
        rc = p.wait(120)
        took = time.monotonic() - self.started
        err = self.stderr()
        self.assertEqual(rc, 124, err)
        self.assertIn("rank_desync", err)
        self.assertIn(f"rank 2 waits in barrier at {self.script}:{line_of('BARRIER_LINE')} (evaluate)", err)
        self.assertIn(f"ranks 0, 1, 3 wait in all_reduce at {self.script}:{line_of('ALL_REDUCE_LINE')} (train_step)",
                      err)
        self.assertIn("rank 2 skipped a collective", err)
        self.assertIn("baton launch: stopped on a hang: rank_desync", err)
        # gloo on torch 1.13: no Flight Recorder, and the verdict says it judged by the stacks.
        self.assertIn("stacks only: no Flight Recorder pipe (gloo, PyTorch before 2.3", err)
        # Start-up (4 ranks importing torch on 2 cores) + hang_seconds + 15 s at most.
        self.assertLess(took, 20 + HANG + 15, err)
        self.assertEqual(processes_with(self.dir), [], "no rank is left")
        with open(os.path.join(self.dir, "logs", "skip", "stacks", "hang.txt")) as f:
            self.assertIn("rank_desync", f.read())

    def test_the_flight_recorder_names_the_collective_each_rank_called(self):
        # Each rank keeps a Flight Recorder and answers its pipe as ProcessGroupNCCL does (emulated over
        # gloo: hang_ranks.py's FlightRecorder). Once the ranks look stuck, baton writes to each rank's
        # pipe, reads the pickled dumps with the job's interpreter, and the verdict says what each rank
        # called as the group's collective #6.
        fixtures = os.path.join(HERE, "..", "..", "fixtures", "flight_recorder")
        db = os.path.join(self.dir, "history.db")
        self.start("skip", hook=True, extra=["--flight-recorder"], env_extra={"BATON_FR_FIXTURES": fixtures}, db=db)
        took = self.wait_for("Flight Recorder:", 90)
        err = self.stderr()
        self.assertIn("rank_desync", err)
        self.assertIn("Flight Recorder: the ranks called #6 of process group 0 (default_pg) as different collectives: "
                      f"ranks 0, 1, 3 all_reduce at {self.script}:{line_of('ALL_REDUCE_LINE')}; "
                      f"rank 2 barrier at {self.script}:{line_of('BARRIER_LINE')}", err)
        self.assertLess(took, 20 + HANG + 15, err)
        fr = os.path.join(self.dir, "logs", "skip", "stacks", "fr")
        self.assertEqual(sorted(f for f in os.listdir(fr) if f.startswith("rank_")),
                         ["rank_0", "rank_1", "rank_2", "rank_3"], "the dumps are kept with the run")
        self.stop_and_check_nothing_is_left()
        # The verdict is kept with the run: `baton runs show` prints it whole, the report has a Hang
        # section with each rank's last steps.
        runs = [json.loads(l) for l in subprocess.run([BATON, "runs", "--db", db, "--json"], capture_output=True,
                                                      text=True, timeout=30).stdout.splitlines()]
        run = str(runs[0]["id"])
        shown = subprocess.run([BATON, "runs", "show", run, "--db", db], capture_output=True, text=True, timeout=30)
        self.assertIn("\nhang verdict at ", shown.stdout)
        self.assertIn("Flight Recorder: the ranks called #6", shown.stdout)
        self.assertIn("  rank 2 (most recent call last):", shown.stdout)
        md = subprocess.run([BATON, "report", run, "--db", db, "--markdown"], capture_output=True, text=True,
                            timeout=30).stdout
        self.assertIn("\n## Hang\n\n`rank_desync` at +", md)
        for rank in range(4):
            self.assertRegex(md, rf"\n\| {rank} \| [0-9]+ \| [0-9:.]+ \| [0-9.]+ s \|", md)

    def test_with_the_hook_a_spinning_rank_is_named(self):
        self.start("spin", hook=True)
        self.wait_for("rank_hang", 90)
        err = self.stderr()
        self.assertIn(f"rank 2 is in evaluate() at {self.script}:", err)
        self.assertTrue("running (" in err or "busy in one place" in err, err)
        self.assertIn(f"ranks 0, 1, 3 wait in all_reduce at {self.script}:{line_of('ALL_REDUCE_LINE')}", err)
        self.assertIn("rank 2 does not reach the collective", err)
        self.stop_and_check_nothing_is_left()

    def test_a_rank_blocked_reading_a_pipe(self):
        self.start("pipe")
        self.wait_for("rank_hang", 90)
        err = self.stderr()
        self.assertIn(f"rank 2 is blocked in evaluate() at {self.script}:{line_of('PIPE_LINE')} with no CPU", err)
        self.assertIn(f"ranks 0, 1, 3 wait in all_reduce at {self.script}:{line_of('ALL_REDUCE_LINE')}", err)
        self.stop_and_check_nothing_is_left()

    def test_a_rank_that_exited_while_the_others_wait(self):
        self.start("exit")
        self.wait_for("rank_hang", 90)
        err = self.stderr()
        self.assertIn("rank 2 exited (status 0)", err)
        self.assertIn("rank 2 ended while the others wait for it", err)
        self.assertIn(f"ranks 0, 1, 3 wait in all_reduce at {self.script}:{line_of('ALL_REDUCE_LINE')}", err)
        self.stop_and_check_nothing_is_left()

    def test_a_frozen_rank_is_stuck_in_the_kernel(self):
        freezer = "/sys/fs/cgroup/freezer"
        if os.geteuid() != 0 or not os.access(os.path.join(freezer, "cgroup.procs"), os.W_OK):
            self.skipTest("needs root and the cgroup v1 freezer")
        ready = os.path.join(self.dir, "frozen-pid")
        self.start("freeze", hook=True, extra=["--ready", ready])
        deadline = time.monotonic() + 60
        while not os.path.exists(ready) and time.monotonic() < deadline:
            time.sleep(0.1)
        with open(ready) as f:
            pid = f.read()
        cg = os.path.join(freezer, f"baton-hang-test-{os.getpid()}")
        os.mkdir(cg)
        try:
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(pid)
            with open(os.path.join(cg, "freezer.state"), "w") as f:
                f.write("FROZEN")
            self.wait_for("rank_hang", 90)
            err = self.stderr()
            self.assertIn("rank 2 is stuck in the kernel (state D", err)
            self.assertIn(f"ranks 0, 1, 3 wait in all_reduce at {self.script}:{line_of('ALL_REDUCE_LINE')}", err)
        finally:
            with open(os.path.join(cg, "freezer.state"), "w") as f:
                f.write("THAWED")
            deadline = time.monotonic() + 10  # thawing is asynchronous: wait until the kernel says it is done
            while time.monotonic() < deadline:
                with open(os.path.join(cg, "freezer.state")) as f:
                    if f.read().strip() == "THAWED":
                        break
                time.sleep(0.02)
            self.stop_and_check_nothing_is_left()
            os.rmdir(cg)

    def test_no_hang_on_evaluation_slow_first_step_slow_loader_and_silence(self):
        # Every rank: a DataLoader whose worker takes 1.5 x HANG to start, a first step of 1.5 x HANG
        # of compute, an evaluation of 3 x HANG with no step, nothing printed.
        p = self.start("eval", hook=True, extra=["--seconds", str(3 * HANG)])
        rc = p.wait(240)
        err = self.stderr()
        self.assertEqual(rc, 0, err)
        self.assertNotIn("rank_hang", err)
        self.assertNotIn("rank_desync", err)

    def test_baton_run_of_torchrun_finds_the_desync(self):
        # The same job under Debian's torchrun, watched by `baton run` (its ranks are torchrun's children).
        script = os.path.join(self.dir, "hang_ranks.py")
        with open(SCRIPT) as src, open(script, "w") as dst:
            dst.write(src.read())
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.started = time.monotonic()
        with open(self.err, "w") as err:
            r = subprocess.run([BATON, "run", "--no-db", "--hang-seconds", str(HANG), "--on-hang", "stop", "--",
                                "/usr/bin/torchrun", "--nproc_per_node", "4", "--master_port", str(port), "-r", "1",
                                "-t", "1", "--log_dir", os.path.join(self.dir, "torchrun-logs"), script, "skip"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, timeout=120)
        out = self.stderr()
        self.assertEqual(r.returncode, 124, out)
        self.assertIn("baton run: stopped on a hang: rank_desync: rank 2 waits in barrier at "
                      f"{script}:{line_of('BARRIER_LINE')}", out)
        self.assertIn(f"ranks 0, 1, 3 wait in all_reduce at {script}:{line_of('ALL_REDUCE_LINE')}", out)
        self.assertEqual(processes_with(self.dir), [], "no rank is left")

    def test_stacks_of_a_running_launch_and_bad_input(self):
        db = os.path.join(self.dir, "history.db")
        self.start("skip", hang=600, db=db)  # no verdict during this test: stacks on demand only
        deadline = time.monotonic() + 90
        while True:
            t0 = time.monotonic()
            r = subprocess.run([BATON, "stacks", "--pid", str(self.launcher.pid), "--json"], capture_output=True,
                               text=True, timeout=30)
            took = time.monotonic() - t0
            groups = json.loads(r.stdout)["groups"] if r.returncode == 0 else []
            # All at the hang: not between steps, nor (rank 2 ahead) three of them still in the
            # TCPStore's start-up while rank 2 is elsewhere.
            if [g["ranks"] for g in groups] == [[0, 1, 3], [2]] and \
                    [g["frames"][0]["function"] for g in groups] == ["all_reduce", "barrier"]:
                break
            self.assertLess(time.monotonic(), deadline, r.stdout + r.stderr + self.stderr())
            time.sleep(0.5)
        self.assertLess(took, 2.0, "4 ranks' stacks collected and grouped")
        self.assertEqual(groups[0]["frames"][0]["function"], "all_reduce")
        self.assertEqual(groups[1]["frames"][1]["line"], line_of("BARRIER_LINE"))
        # By the run's id in the history, as text.
        runs = [json.loads(l) for l in subprocess.run([BATON, "runs", "--db", db, "--json"], capture_output=True,
                                                      text=True, timeout=30).stdout.splitlines()]
        running = [r["id"] for r in runs if r["state"] == "running"]
        self.assertEqual(len(running), 1, runs)
        r = subprocess.run([BATON, "stacks", str(running[0]), "--db", db], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("4 of 4 processes answered", r.stdout)
        self.assertIn("ranks 0, 1, 3: main thread (most recent call last)", r.stdout)
        self.assertIn(f'  > File "{self.script}", line {line_of("BARRIER_LINE")}, in evaluate', r.stdout)
        # Bad input: one line, no crash, the right status.
        sleeper = subprocess.Popen(["/bin/sleep", "30"])
        gone = subprocess.Popen(["/bin/true"])
        gone.wait()
        try:
            for args, rc, text in [
                ([], 2, "name a running run's id or --pid PID"),
                (["1", "--pid", "1"], 2, "one of them"),
                (["--pid", "0"], 2, "--pid"),
                (["--pid", str(gone.pid)], 1, f"no process {gone.pid}"),
                (["--pid", str(sleeper.pid)], 1, "has no stack handler: it was not started by baton"),
                (["999", "--db", db], 1, "no run 999"),
                (["abc", "--db", db], 2, ""),
                (["1", "--db", os.path.join(self.dir, "absent.db")], 1, ""),
            ]:
                r = subprocess.run([BATON, "stacks"] + args, capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, rc, (args, r.stderr))
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, (args, r.stderr))
                self.assertIn(text, r.stderr, args)
            self.assertIsNone(sleeper.poll(), "a process without the handler is never signalled")
        finally:
            sleeper.kill()
            sleeper.wait()
        self.stop_and_check_nothing_is_left()
        r = subprocess.run([BATON, "stacks", str(running[0]), "--db", db], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("is not running", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
