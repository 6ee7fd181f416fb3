#!/usr/bin/env python3
"""`pip install` brings the whole tool: the wheel built at the repository's root with no package index
(the in-tree backend, python/baton_build.py, taking the portable binary the build made), installed into a
fresh virtual environment (Debian's PyTorch visible through --system-site-packages) with --no-index. From
there: `baton` on the environment's PATH is the real binary of this commit (no Python in front of it),
`baton snapshot --json`, `python -m baton doctor` runs the same binary, `baton run -- python train.py`
with the hook on Debian's torch reports its steps, and `pip uninstall` leaves nothing behind. Also the
hook-only wheel of ./python stays py3-none-any.

usage: wheel_test.py BATON_PORTABLE BATON SOURCE_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

PORTABLE, BATON, ROOT = sys.argv[1:4]
failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)


TRAIN = """
import time
import torch
import baton.torch as bt
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in bt.watch([torch.randn(16, 8) for _ in range(20)]):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.005)  # (a step as long as a small real one: the hook's datagrams are not sent faster than read)
print("trained")
"""


def main():
    tmp = tempfile.mkdtemp(prefix="baton-wheel-")
    try:
        dist = os.path.join(tmp, "dist")
        env = dict(os.environ, BATON_PORTABLE=PORTABLE)
        r = run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps", "--quiet", "-w", dist, ROOT],
                env=env)
        check(r.returncode == 0, "pip wheel at the root, offline: " + r.stderr.strip()[-500:])
        wheels = os.listdir(dist) if os.path.isdir(dist) else []
        check(len(wheels) == 1, "one wheel: %s" % wheels)
        if len(wheels) != 1:
            return
        wheel = os.path.join(dist, wheels[0])
        objdump = run(["objdump", "-T", PORTABLE]).stdout
        floor = max(int(m) for m in re.findall(r"GLIBC_2\.(\d+)", objdump))
        machine = os.uname().machine
        check(wheels[0] == "baton-0.1.0-py3-none-manylinux_2_%d_%s.whl" % (floor, machine),
              "its tag is the binary's glibc floor and machine: %s (GLIBC_2.%d)" % (wheels[0], floor))
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            mode = z.getinfo("baton-0.1.0.data/scripts/baton").external_attr >> 16
        check("baton/torch.py" in names and "baton-0.1.0.data/scripts/baton" in names and mode & 0o111,
              "it holds the hook and the binary, executable")
        print("wheel: %s, %.1f MB" % (wheels[0], os.path.getsize(wheel) / 1e6))

        venv = os.path.join(tmp, "venv")
        r = run([sys.executable, "-m", "venv", "--system-site-packages", venv])
        check(r.returncode == 0, "a fresh virtual environment: " + r.stderr.strip())
        py, pip = os.path.join(venv, "bin", "python"), [os.path.join(venv, "bin", "python"), "-m", "pip"]
        before = set(os.path.relpath(os.path.join(d, f), venv) for d, _, fs in os.walk(venv) for f in fs)
        r = run(pip + ["install", "--no-index", "--quiet", wheel])
        check(r.returncode == 0, "pip install --no-index of the wheel: " + r.stderr.strip()[-500:])
        installed = os.path.join(venv, "bin", "baton")
        with open(installed, "rb") as f:
            check(f.read(4) == b"\x7fELF", "the environment's baton is the binary itself, not a wrapper")
        mine = run([BATON, "--version"]).stdout.strip()
        theirs = run([installed, "--version"]).stdout.strip()
        check(theirs == mine and "commit" in theirs, "baton --version from the wheel: %r (the build: %r)" % (theirs, mine))
        venv_env = dict(os.environ, PATH=os.path.join(venv, "bin") + ":/usr/bin:/bin")
        venv_env.pop("PYTHONPATH", None)
        r = run(["baton", "snapshot", "--json", "--no-gpus"], env=venv_env)
        check(r.returncode == 0 and "cpu" in json.loads(r.stdout), "baton snapshot --json from the PATH")
        direct = run([installed, "doctor", "--no-gpus"], env=venv_env, cwd=tmp)
        viapy = run([py, "-m", "baton", "doctor", "--no-gpus"], env=venv_env, cwd=tmp)
        check(viapy.returncode == direct.returncode and viapy.stdout.splitlines()[:1] == direct.stdout.splitlines()[:1]
              and viapy.stdout, "python -m baton doctor runs the wheel's binary: %r" % viapy.stdout[:200])
        r = run([py, "-c", "import baton, baton.torch, baton._binary as b; print(baton.__file__); print(b.binary())"],
                env=venv_env, cwd=tmp)
        lines = r.stdout.split()
        check(r.returncode == 0 and lines[0].startswith(venv) and lines[1] == installed,
              "import baton.torch from the environment, and the hook names the wheel's binary: " + r.stdout + r.stderr)
        train = os.path.join(tmp, "train.py")
        with open(train, "w") as f:
            f.write(TRAIN)
        summary = os.path.join(tmp, "summary.json")
        r = run(["baton", "run", "--no-db", "--no-gpus", "--quiet", "--summary-json", summary, "--", py, train],
                env=venv_env, cwd=tmp)
        steps = json.load(open(summary)).get("steps", {}) if os.path.exists(summary) else {}
        check(r.returncode == 0 and "trained" in r.stdout, "baton run -- python train.py: " + r.stderr.strip()[-300:])
        check(steps.get("count") == 20, "the hook's 20 steps reached baton run: %s" % str(steps)[:200])

        r = run(pip + ["uninstall", "--yes", "--quiet", "baton"])
        check(r.returncode == 0, "pip uninstall: " + r.stderr.strip())
        after = set(os.path.relpath(os.path.join(d, f), venv) for d, _, fs in os.walk(venv) for f in fs)
        left = sorted(p for p in after - before if "__pycache__" not in p or "baton" in p)
        check(not left, "uninstall leaves nothing: %s" % left[:10])

        # The hook alone, from ./python: no binary, any platform.
        hook_dist = os.path.join(tmp, "hook")
        r = run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps", "--quiet", "-w", hook_dist,
                 os.path.join(ROOT, "python")], env=env)
        check(r.returncode == 0 and os.listdir(hook_dist) == ["baton-0.1.0-py3-none-any.whl"],
              "pip wheel ./python: the hook alone, py3-none-any: %s" % (os.listdir(hook_dist) if r.returncode == 0 else r.stderr))

        # `pip wheel .` in a fresh copy of the sources (no .deps/, no build tree, no BATON_PORTABLE) where the
        # chart library cannot be fetched: the backend fetches what the quick start fetches, and a failure
        # is one line of its own under pip's, not a traceback.
        fresh = os.path.join(tmp, "fresh")
        os.makedirs(fresh)
        for part in ("pyproject.toml", "CMakeLists.txt", "python", "scripts"):
            src = os.path.join(ROOT, part)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(
                src, os.path.join(fresh, part), **({"ignore": shutil.ignore_patterns("__pycache__")} if os.path.isdir(src) else {}))
        offline = {k: v for k, v in env.items() if k != "BATON_PORTABLE"}
        offline.update(https_proxy="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", no_proxy="", NO_PROXY="")
        r = run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps", "--no-build-isolation", "-w",
                 os.path.join(tmp, "fresh-dist"), fresh], env=offline, cwd=fresh)
        check(r.returncode != 0, "pip wheel . without the chart library and without the registry fails")
        check("baton: fetching the live page's chart library failed" in r.stderr and "Traceback" not in r.stderr,
              "the backend's one line says why, with no traceback: " + r.stderr.strip()[-800:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
print("wheel_test: " + ("%d check(s) failed" % len(failures) if failures else "every check passed"))
sys.exit(1 if failures else 0)
