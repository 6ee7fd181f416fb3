#!/usr/bin/env python3
"""`baton tune` on PyTorch's MNIST example, before and after: `baton tune` tries what the script's first
run points at (tests/fixtures/pytorch-examples/mnist/main.py, not a line changed); then whole epochs of the
script as it is under `baton run` and under `baton run --tuned`, alternating (before, after, after, before
for 2 rounds). Prints the tuning's table, each epoch run's steps, median step time, samples/s, data wait, CPU
and wall time, and the ratio of the medians.

The data is MNIST's format written by tests/fixtures/pytorch-examples/make_mnist.py (no network here):
the same bytes per sample as the real files, so the same loading time.

  bench/tune_example.py [--baton PATH] [--epochs N] [--rounds N] [--budget D] [--python PATH]
      defaults: build/src/cli/baton, 1, 2, 3m, /usr/bin/python3 (Debian's, with python3-torch and
      python3-torchvision)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "tests", "fixtures", "pytorch-examples")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baton", default=os.path.join(ROOT, "build", "src", "cli", "baton"))
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--budget", default="3m")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--python", default="/usr/bin/python3")
    a = ap.parse_args()
    if a.epochs < 1 or a.rounds < 1:
        sys.exit("tune_example: --epochs and --rounds must be at least 1")
    for path in (a.baton, a.python):
        if not os.access(path, os.X_OK):
            sys.exit("tune_example: %s is not an executable" % path)
    probe = subprocess.run([a.python, "-c", "import torch, torchvision; print(torch.__version__, "
                            "torchvision.__version__, torch.get_num_threads())"], capture_output=True, text=True)
    if probe.returncode:
        sys.exit("tune_example: %s has no torch and torchvision: %s" % (a.python, probe.stderr.strip()[-200:]))
    torch_version, vision_version, threads = probe.stdout.split()
    print("PyTorch %s, torchvision %s: %s intra-op thread(s) by default on %d CPU(s)" %
          (torch_version, vision_version, threads, len(os.sched_getaffinity(0))))

    with tempfile.TemporaryDirectory(prefix="baton-tune-example-") as tmp:
        subprocess.run([a.python, os.path.join(EXAMPLES, "make_mnist.py"), os.path.join(tmp, "data")], check=True)
        work = os.path.join(tmp, "mnist")  # the example reads ../data
        os.mkdir(work)
        db = os.path.join(tmp, "baton.db")
        script = [a.python, os.path.join(EXAMPLES, "mnist", "main.py")]
        epoch = ["--epochs", str(a.epochs)]

        def baton(*args, quiet=True):
            out = subprocess.run([a.baton, "--config", "/dev/null", *args], cwd=work, text=True,
                                 stdin=subprocess.DEVNULL, capture_output=quiet)
            if out.returncode:
                sys.exit("tune_example: baton %s exited with %d: %s" %
                         (args[0], out.returncode, (out.stderr or "").strip()[-400:]))
            return out

        def epoch_run(name, *flags):
            summary = os.path.join(tmp, name + ".json")
            start = time.monotonic()
            out = baton("run", *flags, "--db", db, "--summary-json", summary, "--", *script, *epoch)
            wall = time.monotonic() - start
            with open(summary) as f:
                s = json.load(f)
            # The script's own verdict on its model: the same training, at another speed.
            s["test_set"] = [l.strip() for l in out.stdout.splitlines() if l.startswith("Test set:")][-1:]
            return s, wall

        print("\nbaton tune --budget %s -- python3 main.py\n" % a.budget, flush=True)
        tuned = baton("tune", "--db", db, "--budget", a.budget, "--", *script)
        print(tuned.stdout, flush=True)
        # Then epochs of each, alternating before, after, after, before, ... so that a machine whose speed
        # drifts (a shared virtual machine's neighbours) weighs on both alike.
        runs = {"before": [], "after": []}
        order = [("before", "after") if r % 2 == 0 else ("after", "before") for r in range(a.rounds)]
        for r, pair in enumerate(order):
            for which in pair:
                print("round %d: %d epoch(s) %s ..." % (r + 1, a.epochs, "as the script is" if which == "before"
                                                       else "under baton run --tuned"), flush=True)
                runs[which].append(epoch_run("%s-%d" % (which, r), *(["--tuned"] if which == "after" else [])))

    print("\n%-26s %6s %14s %11s %10s %6s %8s" %
          ("", "steps", "median step", "samples/s", "data wait", "CPU", "wall"))
    for which, label in (("before", "before (your settings)"), ("after", "after (baton run --tuned)")):
        for s, wall in runs[which]:
            st = s["steps"]
            print("%-26s %6d %11.1f ms %11.0f %8.0f %% %4.0f %% %6.1f s" %
                  (label, st["count"], 1000 * st["median_seconds"], st["samples_per_second"],
                   st["data_wait_percent"], s["job"]["cpu_avg_percent"], wall))
    for which in ("before", "after"):
        s = runs[which][-1][0]
        print("%-6s the script's last evaluation: %s" % (which, s["test_set"][0] if s["test_set"] else "none"))
        for g in s["gpus"]:  # on a machine with GPUs (scripts/device-check.sh)
            print("%-6s GPU %s: utilisation %s %%, energy %s" %
                  (which, g.get("index"), g.get("utilization_avg_percent"), json.dumps(s.get("energy"))))
    rate = {w: statistics.median(s["steps"]["samples_per_second"] for s, _ in runs[w]) for w in runs}
    wall = {w: statistics.median(t for _, t in runs[w]) for w in runs}
    ratio = rate["after"] / rate["before"] if rate["before"] else 0
    print("\nafter / before (medians of %d epoch run(s) each): %.2fx samples/s (%+.1f %%), wall %.2fx" %
          (a.rounds, ratio, 100 * (ratio - 1), wall["after"] / wall["before"] if wall["before"] else 0))


if __name__ == "__main__":
    main()
