"""`baton launch` end to end with Debian's python3-torch (gloo on the CPU) and, for comparison,
Debian's torchrun: the environment key by key, a failing rank and the teardown, a SIGKILLed
launcher, restarts, two "nodes" on loopback training together, Slurm's variables, --bind-gpus on
the fake NVML, and bad input refused before any worker starts.

Usage: launch_test.py BATON FAKE_NVML_DIR SCENARIOS_DIR [unittest args, e.g. LaunchTest.test_x]"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

BATON, FAKE_NVML, SCENARIOS = sys.argv[1:4]
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"

# What may differ between a rank under torchrun and under baton launch (docs/launch.md): the run's
# id, port and log paths; the store (baton hosts none: rank 0's init_process_group creates it);
# the variables baton adds; OMP_NUM_THREADS (torchrun: 1; baton: the CPUs over the ranks).
MAY_DIFFER = {"TORCHELASTIC_RUN_ID", "MASTER_PORT", "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_USE_AGENT_STORE",
              "OMP_NUM_THREADS", "_"}
BATON_ADDS = {"BATON_EVENTS", "BATON_MEMORY_DIR", "BATON_OWNER", "BATON_VERSION", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "PYTHONUNBUFFERED",
              "PYTHONPATH", "BATON_STACKS_DIR", "BATON_STACKS_SIGNAL",
              # PyTorch's Flight Recorder (docs/launch.md, "When a job hangs")
              "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_DUMP_ON_TIMEOUT",
              "TORCH_FR_DUMP_ON_TIMEOUT", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE",
              "TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "TORCH_FR_DEBUG_INFO_PIPE_FILE"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive(pid):
    """True while /proc/PID exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def launch(args, env=None, timeout=120, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([BATON, "launch", "--no-db", "--python", PYTHON] + args, env=e, cwd=cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


class LaunchTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="baton-launch-test-")
        self.dir = self.tmp.name
        self.logs = os.path.join(self.dir, "logs")

    def tearDown(self):
        self.tmp.cleanup()

    def test_four_ranks_all_reduce_with_torchruns_environment(self):
        out_b, out_t = os.path.join(self.dir, "baton"), os.path.join(self.dir, "torchrun")
        r = launch(["--nproc-per-node", "4", "--log-dir", self.logs, "--run-id", "envtest",
                    os.path.join(HERE, "allreduce_env.py"), out_b])
        self.assertEqual(r.returncode, 0, r.stderr)
        for rank in range(4):
            self.assertIn(f"rank {rank} of 4: sum 10", r.stdout)
        # Debian's torchrun (1.13 on Python 3.11) fails with its default --redirects/--tee ("0"
        # no longer maps to Std.NONE), so it is given explicit ones.
        t = subprocess.run(["/usr/bin/torchrun", "--nproc_per_node", "4", "--master_port", str(free_port()),
                            "--log_dir", os.path.join(self.dir, "torchrun-logs"), "-r", "1", "-t", "1",
                            os.path.join(HERE, "allreduce_env.py"), out_t],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        self.assertEqual(t.returncode, 0, t.stderr)
        for rank in range(4):
            with open(os.path.join(out_b, f"{rank}.json")) as f:
                b = json.load(f)
            with open(os.path.join(out_t, f"{rank}.json")) as f:
                tr = json.load(f)
            self.assertEqual(b["sum"], 10.0)
            self.assertTrue(b["unbuffered"])
            for key in sorted(set(b["env"]) | set(tr["env"])):
                if key in MAY_DIFFER:
                    continue
                if key in BATON_ADDS and key not in tr["env"]:
                    continue
                self.assertEqual(b["env"].get(key), tr["env"].get(key), f"rank {rank}: {key}")
            # The keys that differ still say the same thing in baton's terms.
            self.assertEqual(b["env"]["TORCHELASTIC_RUN_ID"], "envtest")
            self.assertEqual(b["env"]["TORCHELASTIC_USE_AGENT_STORE"], "False")
            self.assertEqual(b["env"]["TORCHELASTIC_ERROR_FILE"],
                             os.path.join(self.logs, "envtest", "attempt_0", str(rank), "error.json"))
            self.assertEqual(b["env"]["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1")
            self.assertEqual(b["env"]["TORCH_NCCL_TRACE_BUFFER_SIZE"], "2000")
            self.assertEqual(b["env"]["TORCH_FR_DUMP_TEMP_FILE"],
                             os.path.join(self.logs, "envtest", "stacks", "fr", "rank_"))
            # The stack handler (baton stacks): first on the path, the ranks' files with the logs.
            self.assertEqual(b["env"]["PYTHONPATH"], os.path.join(self.logs, "envtest", "python"))
            self.assertEqual(b["env"]["BATON_STACKS_DIR"], os.path.join(self.logs, "envtest", "stacks"))
            self.assertEqual(b["env"]["OMP_NUM_THREADS"], str(max(1, len(os.sched_getaffinity(0)) // 4)))
        for rank in range(4):
            for name in ("stdout.log", "stderr.log"):
                self.assertTrue(os.path.isfile(os.path.join(self.logs, "envtest", "attempt_0", str(rank), name)))
        with open(os.path.join(self.logs, "envtest", "attempt_0", "2", "stdout.log")) as f:
            self.assertEqual(f.read(), "rank 2 of 4: sum 10\n")

    def _pids(self, out, world):
        pids = []
        for rank in range(world):
            with open(os.path.join(out, f"pids.{rank}")) as f:
                pids += [int(p) for p in f.read().split()]
        return pids

    def test_a_failed_rank_ends_the_others_and_names_itself(self):
        out = os.path.join(self.dir, "out")
        os.makedirs(out)
        grace = 3
        r = launch(["--nproc-per-node", "4", "--grace", str(grace), "--log-dir", self.logs, "--run-id", "fail",
                    os.path.join(HERE, "fail_rank2.py"), out], timeout=60)
        ended = time.time()
        self.assertEqual(r.returncode, 7, r.stderr)
        with open(os.path.join(out, "failed_at")) as f:
            failed_at = float(f.read())
        self.assertLess(ended - failed_at, grace + 1, r.stderr)
        self.assertIn("baton launch: rank 2 failed first (local rank 2, pid ", r.stderr)
        self.assertIn("): exited with 7 at ", r.stderr)
        self.assertIn("its last 20 stderr lines (" + os.path.join(self.logs, "fail", "attempt_0", "2", "stderr.log"),
                      r.stderr)
        self.assertIn("  | rank 2 stderr line 29\n  | ValueError: rank 2 gave up\n", r.stderr)
        self.assertNotIn("  | rank 2 stderr line 10\n", r.stderr)  # only the last 20
        for pid in self._pids(out, 4):
            self.assertFalse(alive(pid), f"pid {pid} is left")

    def test_the_rank_that_printed_an_nccl_error_first_is_named(self):
        # Rank 1 prints NCCL's warning on its stdout, then rank 2 a watchdog timeout on its stderr and
        # fails: the block names rank 2 as the first to fail and rank 1 as the first to report NCCL's error.
        out = os.path.join(self.dir, "out")
        os.makedirs(out)
        r = launch(["--nproc-per-node", "4", "--grace", "2", "--log-dir", self.logs, "--run-id", "nccl",
                    os.path.join(HERE, "fail_rank2.py"), out], env={"NCCL_LINE": "1"}, timeout=60)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn("baton launch: rank 2 failed first", r.stderr)
        self.assertIn("  NCCL's first error line came from rank 1 at ", r.stderr)
        self.assertIn(os.path.join(self.logs, "nccl", "attempt_0", "1", "stdout.log") + "):\n  | host:", r.stderr)
        self.assertIn("NCCL WARN NET/Socket : peer 127.0.0.1<41234> shut down\n", r.stderr)
        for pid in self._pids(out, 4):
            self.assertFalse(alive(pid), f"pid {pid} is left")

    def test_a_rank_that_ignores_sigterm_dies_at_the_end_of_the_grace(self):
        out = os.path.join(self.dir, "out")
        os.makedirs(out)
        r = launch(["--nproc-per-node", "4", "--grace", "2", "--log-dir", self.logs,
                    os.path.join(HERE, "fail_rank2.py"), out], env={"IGNORE_TERM": "1"}, timeout=60)
        ended = time.time()
        self.assertEqual(r.returncode, 7, r.stderr)
        with open(os.path.join(out, "failed_at")) as f:
            took = ended - float(f.read())
        self.assertGreaterEqual(took, 1.9, r.stderr)
        self.assertLess(took, 3.5, r.stderr)
        self.assertIn("1 process(es) needed SIGKILL to end", r.stderr)
        for pid in self._pids(out, 4):
            self.assertFalse(alive(pid), f"pid {pid} is left")

    def test_no_rank_survives_a_sigkilled_launcher(self):
        out = os.path.join(self.dir, "out")
        os.makedirs(out)
        p = subprocess.Popen([BATON, "launch", "--no-db", "--log-dir", self.logs, "--nproc-per-node", "3",
                              "--no-python", "/bin/sh", "-c", f"echo $$ > {out}/pid.$RANK; exec sleep 120"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        def written():  # each rank's pid file, with its line (the shell makes it, then writes it)
            for rank in range(3):
                try:
                    with open(f"{out}/pid.{rank}") as f:
                        if not f.read().endswith("\n"):
                            return False
                except FileNotFoundError:
                    return False
            return True
        deadline = time.time() + 30
        while not written() and time.time() < deadline:
            time.sleep(0.02)
        pids = []
        for rank in range(3):
            with open(os.path.join(out, f"pid.{rank}")) as f:
                pids.append(int(f.read()))
        self.assertTrue(all(alive(pid) for pid in pids))
        p.kill()
        p.wait()
        p.stderr.close()
        deadline = time.time() + 2
        while any(alive(pid) for pid in pids) and time.time() < deadline:
            time.sleep(0.02)
        self.assertEqual([pid for pid in pids if alive(pid)], [])

    def test_ctrl_c_and_sigterm_reach_every_rank(self):
        for sig, name in ((signal.SIGINT, "INT"), (signal.SIGTERM, "TERM")):
            out = os.path.join(self.dir, name)
            os.makedirs(out)
            p = subprocess.Popen([BATON, "launch", "--no-db", "--log-dir", self.logs, "--nproc-per-node", "2",
                                  "--max-restarts", "3", "--no-python", "/bin/sh", "-c",
                                  f"trap 'echo got {name} >> {out}/$RANK; exit 5' {name}; touch {out}/ready.$RANK; "
                                  "while :; do sleep 0.05; done"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            deadline = time.time() + 30
            while len([n for n in os.listdir(out) if n.startswith("ready.")]) < 2 and time.time() < deadline:
                time.sleep(0.02)
            p.send_signal(sig)
            err = p.communicate(timeout=30)[1]
            # The launcher's own exit status says it was stopped; no restart after a stop.
            self.assertEqual(p.returncode, 128 + sig, err)
            self.assertNotIn("restarting", err)
            for rank in (0, 1):
                with open(os.path.join(out, str(rank))) as f:
                    self.assertEqual(f.read(), f"got {name}\n")

    def test_max_restarts_starts_the_group_again(self):
        r = launch(["--nproc-per-node", "2", "--max-restarts", "2", "--tee", "--log-dir", self.logs, "--run-id",
                    "again", os.path.join(HERE, "restart_once.py")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[rank 1]:rank 1 restart count 0 of max 2\n", r.stdout)
        self.assertIn("[rank 1]:rank 1 restart count 1 of max 2\n", r.stdout)
        self.assertIn("baton launch: rank 1 failed first (local rank 1, pid ", r.stderr)
        self.assertIn("restarting the 2 local rank(s): attempt 1 of 2", r.stderr)
        self.assertIn("2 attempts, logs in " + os.path.join(self.logs, "again"), r.stderr)
        for attempt in (0, 1):
            with open(os.path.join(self.logs, "again", f"attempt_{attempt}", "1", "stdout.log")) as f:
                self.assertEqual(f.read(), f"rank 1 restart count {attempt} of max 2\n")
        # Out of restarts: the failure's own exit status.
        r = launch(["--nproc-per-node", "2", "--log-dir", self.logs, os.path.join(HERE, "restart_once.py")])
        self.assertEqual(r.returncode, 3, r.stderr)

    def test_two_nodes_on_loopback_train_together(self):
        out = os.path.join(self.dir, "out")
        os.makedirs(out)
        port = free_port()
        common = [BATON, "launch", "--no-db", "--python", PYTHON, "--nnodes", "2", "--nproc-per-node", "2",
                  "--master-addr", "127.0.0.1", "--master-port", str(port), "--run-id", "twonodes"]
        nodes = [subprocess.Popen(common + ["--node-rank", str(n), "--log-dir", os.path.join(self.logs, str(n)),
                                            os.path.join(HERE, "train_ddp.py"), out],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for n in (0, 1)]
        results = [n.communicate(timeout=180) for n in nodes]
        for n, (o, e) in zip(nodes, results):
            self.assertEqual(n.returncode, 0, e)
        self.assertIn("rank 0 of 4 (node 0)", results[0][0])
        self.assertIn("rank 3 of 4 (node 1)", results[1][0])
        params = []
        for rank in range(4):
            with open(os.path.join(out, f"params.{rank}")) as f:
                params.append(f.read())
        self.assertEqual(len(set(params)), 1, params)

    def test_slurm_variables_place_the_node(self):
        env = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "node[07-08]", "SLURM_JOB_NUM_NODES": "2",
               "SLURM_NODEID": "1", "SLURM_PROCID": "1", "SLURM_LOCALID": "0", "SLURM_NTASKS": "2"}
        r = launch(["--nproc-per-node", "2", "--log-dir", self.logs, "--no-python",
                    os.path.join(HERE, "show_env.sh")], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = sorted(r.stdout.splitlines())
        self.assertEqual(len(lines), 2, r.stdout)
        for local, line in enumerate(lines):
            self.assertIn(f"rank={2 + local} local={local} world=4 node=1 nodes=2 addr=node07 port=24242 "
                          "run=slurm-4242 ", line)
        self.assertTrue(os.path.isdir(os.path.join(self.logs, "slurm-4242", "attempt_0")))
        # srun started one task per rank instead of one launcher per node: refused with the fix.
        env["SLURM_NTASKS"] = "4"
        r = launch(["--log-dir", self.logs, "--no-python", os.path.join(HERE, "show_env.sh")], env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("run one baton launch per node (srun --ntasks-per-node=1", r.stderr)
        self.assertEqual(r.stdout, "")

    def fake_gpus(self, scenario="four-idle"):
        return {"BATON_NVML_LIBRARY": os.path.join(FAKE_NVML, scenario, "libnvidia-ml.so.1"),
                "BATON_FAKE_NVML_SCENARIO": os.path.join(SCENARIOS, scenario + ".json")}

    def test_bind_gpus_gives_each_rank_its_own_gpu(self):
        r = launch(["--nproc-per-node", "gpu", "--bind-gpus", "--seed", "77", "--nccl-debug=INIT",
                    "--log-dir", self.logs, "--run-id", "bind", "--no-python", os.path.join(HERE, "show_env.sh")],
                   env=self.fake_gpus())
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = sorted(r.stdout.splitlines())
        self.assertEqual(len(lines), 4, r.stdout)
        gpus = set()
        for local, line in enumerate(lines):
            self.assertIn(f"local={local} world=4 ", line)
            self.assertIn(f" gpu={local} order=PCI_BUS_ID seed=77 hashseed=77 nccl=INFO ncclfile=" +
                          os.path.join(self.logs, "bind", "attempt_0", str(local), "nccl.%h.%p.log"), line)
            gpus.add(line.split(" gpu=")[1].split()[0])
        self.assertEqual(gpus, {"0", "1", "2", "3"})
        # Within CUDA_VISIBLE_DEVICES: its entries, in order.
        r = launch(["--nproc-per-node", "gpu", "--bind-gpus", "--log-dir", self.logs, "--no-python",
                    os.path.join(HERE, "show_env.sh")], env=dict(self.fake_gpus(), CUDA_VISIBLE_DEVICES="3,1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(l.split(" gpu=")[1].split()[0] for l in r.stdout.splitlines()), ["1", "3"])
        # Two ranks on one GPU: refused before anything starts.
        r = launch(["--nproc-per-node", "5", "--bind-gpus", "--log-dir", self.logs, "--no-python",
                    os.path.join(HERE, "show_env.sh")], env=self.fake_gpus())
        self.assertEqual(r.returncode, 1)
        self.assertIn("5 ranks would share 4 GPUs: two ranks on one GPU", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_bad_input_is_refused_before_any_worker_starts(self):
        script = os.path.join(HERE, "restart_once.py")
        def refused(args, env=None, code=1):
            r = launch(["--log-dir", self.logs] + args, env=env)
            self.assertEqual(r.returncode, code, r.stderr)
            self.assertEqual(r.stdout, "")
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertFalse(os.path.exists(self.logs), "a worker started")
            return r.stderr
        self.assertIn("--nproc-per-node takes a number from 1 to 1024", refused(["--nproc-per-node", "0", script],
                                                                                code=2))
        self.assertIn("cannot open the script " + os.path.join(self.dir, "nope.py"),
                      refused([os.path.join(self.dir, "nope.py")], code=127))
        self.assertIn("cannot run no-such-program: not found", refused(["--no-python", "no-such-program"], code=127))
        with socket.socket() as s:
            s.bind(("0.0.0.0", 0))
            s.listen()
            port = s.getsockname()[1]
            self.assertIn(f"the master port {port} is in use", refused(["--master-port", str(port), script]))
        self.assertIn("NCCL_SOCKET_IFNAME=nosuchif names no interface of this machine",
                      refused([script], env={"NCCL_SOCKET_IFNAME": "nosuchif"}))
        self.assertIn("--node-rank 2 is not a node of 2", refused(["--nnodes", "2", "--node-rank", "2",
                                                                   "--master-addr", "x", script], code=2))
        self.assertIn("several nodes need --master-addr", refused(["--nnodes", "2", script], code=2))
        self.assertIn("--nproc-per-node gpu, but no GPU is visible",
                      refused(["--nproc-per-node", "gpu", script], env=self.fake_gpus("no-gpu")))
        # An interpreter without torch (a venv of its own, as a pyenv build without it): refused before
        # any rank starts, naming it and the interpreter that has torch.
        venv = os.path.join(self.dir, "no-torch")
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
        r = subprocess.run([BATON, "launch", "--no-db", "--log-dir", self.logs, "--python", venv + "/bin/python",
                            script], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertFalse(os.path.exists(self.logs), "a worker started")
        self.assertIn(venv + "/bin/python (", r.stderr)
        self.assertIn("cannot import torch: every rank would stop at `import torch`", r.stderr)
        self.assertIn("PyTorch is in /usr/bin/python3 (Python ", r.stderr)
        self.assertIn("give --python /usr/bin/python3", r.stderr)

    def test_every_ranks_steps_reach_the_launcher_and_a_straggler_is_named(self):
        config = os.path.join(self.dir, "baton.toml")
        with open(config, "w") as f:
            f.write("[thresholds]\nwindow_seconds = 4\n")  # the rules judge steps spanning most of it
        db = os.path.join(self.dir, "baton.db")
        e = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "..", "python"))
        r = subprocess.run([BATON, "--config", config, "launch", "--python", PYTHON, "--db", db, "--interval",
                            "0.25", "--nproc-per-node", "3", "--log-dir", self.logs, "--name", "straggle",
                            "--report", os.path.join(self.dir, "report.html"),
                            os.path.join(HERE, "straggler.py"), "7"],
                           env=e, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("  steps (baton hook): ", r.stderr)
        self.assertIn("warning rank_straggler [rank:1]: rank 1 is a straggler: its median step takes", r.stderr)
        self.assertIn("recorded as run 1 in " + db, r.stderr)
        runs = subprocess.run([BATON, "runs", "--db", db, "--json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(runs.returncode, 0, runs.stderr)
        self.assertIn('"name": "straggle"', runs.stdout.replace('":"', '": "'))
        self.assertIn("  report: " + os.path.join(self.dir, "report.html"), r.stderr)
        with open(os.path.join(self.dir, "report.html")) as f:
            self.assertIn("rank_straggler", f.read())

    def test_console_filter_and_prefix(self):
        # torchrun's default port taken by someone else changes nothing on one node: baton picks a free one.
        blocker = socket.socket()
        try:
            blocker.bind(("0.0.0.0", 29500))
            blocker.listen()
        except OSError:
            pass  # already taken: all the better
        self.addCleanup(blocker.close)
        r = launch(["--nproc-per-node", "3", "--local-ranks-filter", "0,2", "--tee", "--log-dir", self.logs,
                    "--run-id", "filter", "--no-python", os.path.join(HERE, "show_env.sh")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("port=29500 ", r.stdout)
        shown = sorted(l.split("]:")[0] for l in r.stdout.splitlines())
        self.assertEqual(shown, ["[rank 0", "[rank 2"])
        with open(os.path.join(self.logs, "filter", "attempt_0", "1", "stdout.log")) as f:
            self.assertTrue(f.read().startswith("rank=1 local=1 "))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2)
