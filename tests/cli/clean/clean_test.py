"""`baton clean` end to end with real processes: an orphan holding (fake) GPU memory and a zombie
with a live parent listed, the orphan ended with --yes, --dry-run signalling nothing, another
user's orphan listed but left alone, and the leftover of a SIGKILLed `baton launch` found by the
BATON_OWNER its launcher gave it.

Usage: clean_test.py BATON FAKE_NVML_DIR SCENARIOS_DIR [unittest args]"""
import os
import subprocess
import sys
import tempfile
import time
import unittest

BATON, FAKE_NVML, SCENARIOS = sys.argv[1:4]
PYTHON = "/usr/bin/python3"


def alive(pid):
    """True while /proc/PID exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(predicate, seconds=10):
    deadline = time.time() + seconds
    while not predicate() and time.time() < deadline:
        time.sleep(0.02)
    return predicate()


class CleanTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="baton-clean-test-")
        self.dir = self.tmp.name
        os.chmod(self.dir, 0o755)
        self.procs = os.path.join(self.dir, "gpu-processes")
        open(self.procs, "w").close()
        os.chmod(self.procs, 0o644)
        self.started = []  # pids this test must end
        self.popens = []

    def tearDown(self):
        for pid in self.started:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        for p in self.popens:
            p.wait()
            if p.stdout:
                p.stdout.close()
        self.tmp.cleanup()

    def env(self):
        return dict(os.environ, BATON_NVML_LIBRARY=os.path.join(FAKE_NVML, "four-idle", "libnvidia-ml.so.1"),
                    BATON_FAKE_NVML_SCENARIO=os.path.join(SCENARIOS, "four-idle.json"),
                    BATON_FAKE_NVML_PROCESSES=self.procs)

    def orphan_on_gpu(self, gpu, gib):
        """A `sleep` whose parent shell (its process group's leader) exited, holding GIB on GPU."""
        out = os.path.join(self.dir, f"orphan.{gpu}")
        subprocess.run(["setsid", "/bin/sh", "-c", f"sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {out}"],
                       check=True)
        with open(out) as f:
            pid = int(f.read())
        self.started.append(pid)
        with open(self.procs, "a") as f:
            f.write(f"{gpu} {pid} {gib * 1073741824}\n")
        return pid

    def zombie_with_live_parent(self):
        p = subprocess.Popen([PYTHON, "-c", "import os, sys, time\npid = os.fork()\nif pid == 0: os._exit(0)\n"
                              "print(pid, flush=True)\ntime.sleep(300)"], stdout=subprocess.PIPE, text=True)
        self.started.append(p.pid)
        self.popens.append(p)
        zombie = int(p.stdout.readline())
        self.assertTrue(wait_for(lambda: not alive(zombie)))
        return p, zombie

    def clean(self, *args):
        return subprocess.run([BATON, "clean"] + list(args), env=self.env(), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)

    def test_orphan_and_zombie_are_listed_and_the_orphan_ended(self):
        orphan = self.orphan_on_gpu(1, 3)
        parent, zombie = self.zombie_with_live_parent()
        r = self.clean("--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, rf"\n +{orphan} +\S+ +\S+ +3\.0 GiB gpu_orphan +sleep 300\n")
        self.assertIn("holds 3.0 GiB on GPU1; its parent ended", r.stdout)
        self.assertRegex(r.stdout, rf"\n +{zombie} .* defunct ")
        self.assertIn(f"defunct: its parent {parent.pid} (python3) has not reaped it", r.stdout)
        self.assertRegex(r.stdout, rf"\n +{parent.pid} .* not_reaping ")
        self.assertIn("would end 1 process(es) (--dry-run: nothing signalled)", r.stdout)
        time.sleep(0.3)
        self.assertTrue(alive(orphan), "--dry-run signalled it")
        # Without a terminal and without --yes: refused, nothing signalled.
        r = self.clean()
        self.assertEqual(r.returncode, 2)
        self.assertIn("pass --yes", r.stderr)
        self.assertTrue(alive(orphan))
        r = self.clean("--yes")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"pid {orphan}: ended (SIGTERM)", r.stdout)
        self.assertIn("GPU memory freed: 3.0 GiB", r.stdout)
        self.assertFalse(alive(orphan))
        self.assertTrue(alive(parent.pid), "the zombie's parent was ended")
        # --gpu: only what holds that GPU.
        other = self.orphan_on_gpu(2, 1)
        r = self.clean("--dry-run", "--gpu", "3")
        self.assertNotIn(str(other), r.stdout)
        r = self.clean("--dry-run", "--gpu", "2", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f'"pid":{other}', r.stdout.replace(" ", ""))
        self.assertTrue(alive(other))

    def test_another_users_orphan_is_listed_but_left_alone(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to run baton clean as another user")
        orphan = self.orphan_on_gpu(0, 2)  # root's
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BATON, "clean", "--yes"],
                           env=self.env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, rf"\n +{orphan} +root .* gpu_orphan ")
        self.assertIn("left alone: another user's (root): only they or root can end it", r.stdout)
        self.assertIn("nothing baton clean may end", r.stdout)
        time.sleep(0.2)
        self.assertTrue(alive(orphan))

    def test_the_leftover_of_a_sigkilled_launch(self):
        marker = os.path.join(self.dir, "bg")
        db = os.path.join(self.dir, "baton.db")
        launcher = subprocess.Popen([BATON, "launch", "--db", db, "--name", "crashy", "--no-gpus",
                                     "--log-dir", os.path.join(self.dir, "logs"),
                                     "--no-python", "/bin/sh", "-c", f"sleep 300 & echo $! > {marker}; wait"],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.assertTrue(wait_for(lambda: os.path.exists(marker) and os.path.getsize(marker) > 0))
        with open(marker) as f:
            left = int(f.read())
        self.started.append(left)
        # The launch's run is written to the history by its own thread: killed before that, there
        # would be no run to name.
        self.assertTrue(wait_for(lambda: "crashy" in subprocess.run([BATON, "runs", "--db", db], capture_output=True,
                                                                    text=True).stdout))
        launcher.kill()
        launcher.wait()
        # The rank died with its launcher (parent-death signal); its background child did not.
        time.sleep(0.3)
        self.assertTrue(alive(left))
        r = self.clean("--yes", "--no-gpus", "--db", db)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, rf"\n +{left} .* baton_leftover +sleep 300\n")
        self.assertIn(f"left by baton (pid {launcher.pid}: run 1 (crashy)), which ended", r.stdout)
        self.assertIn(f"pid {left}: ended (SIGTERM)", r.stdout)
        self.assertFalse(alive(left))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2)
