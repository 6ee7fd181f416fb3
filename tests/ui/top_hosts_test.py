#!/usr/bin/env python3
"""`baton top --hosts` against real agents on loopback: three `baton serve` on different fake NVML scenarios
(one wanting the shared token, one a token of its own from [top] host_token_files), one of them stopped
mid-test, a stand-in agent that answers each ask 1.2 s late and counts its connections, and a port where
nothing listens. The frames keep their refresh rate whatever the slow and the dead hosts do; each host is
said as it is; the asks of a host reuse one connection; tokens go where they belong; bad flags and config
are one line and a non-zero exit.

usage: top_hosts_test.py BATON FAKE_NVML_DIR SCENARIOS_DIR FIXTURE_DIR
"""
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "serve"))
from serve_helpers import agent_home, check, scenario_agent, stop, summary, until  # noqa: E402
from fake_agent import FakeAgent, fixture_snapshot  # noqa: E402

BATON, NVML_DIR, SCENARIOS, FIXTURES = sys.argv[1:5]
HEIGHT = 60


def write(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def frames_of(text):
    """The frames of batch output: each HEIGHT lines, one blank line between two."""
    lines = text.split("\n")
    out, at = [], 0
    while at + HEIGHT <= len(lines):
        out.append("\n".join(lines[at:at + HEIGHT]))
        at += HEIGHT + 1
    return out


def line_of(frame, host):
    for line in frame.split("\n"):
        if line.startswith(host + " ") or line.startswith(host + "  "):
            return line
    return ""


def get(url, token=None):
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main():
    home = agent_home("baton-top-hosts-", "")
    shared_token, own_token = os.path.join(home, "shared.token"), os.path.join(home, "own.token")
    write(shared_token, "the-shared-token-of-the-test\n")
    write(own_token, "one-idle-has-its-own-token\n")
    agents, fakes, helpers = [], [], []
    try:
        def agent(scenario, *args, extra_env=None):
            p, port = scenario_agent(BATON, NVML_DIR, SCENARIOS, scenario, home, *args, extra_env=extra_env)
            agents.append(p)
            return p, port
        # A process of ours on four-idle's GPU 2, as NVML would list a CUDA context.
        holder = subprocess.Popen(["bash", "-c", "exec -a 'python3 holder.py --gpu 2' sleep 300"])
        helpers.append(holder)
        on_gpu = os.path.join(home, "nvml-processes")
        write(on_gpu, "2 %d %d\n" % (holder.pid, 30 << 30), 0o644)
        _, four = agent("four-idle", extra_env={"BATON_FAKE_NVML_PROCESSES": on_gpu})
        _, eight = agent("eight-busy", "--token-file", shared_token)
        one_process, one = agent("one-idle", "--token-file", own_token)
        check(None not in (four, eight, one), "three agents serve")
        slow = FakeAgent(fixture_snapshot(BATON, os.path.join(NVML_DIR, "near-oom", "libnvidia-ml.so.1"),
                                          os.path.join(SCENARIOS, "near-oom.json"), FIXTURES,
                                          {0: ("carol", "python slow.py")}), delay=1.2)
        fakes.append(slow)
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        dead_port = dead.getsockname()[1]
        dead.close()

        # The agent's light snapshot: the processes on a GPU alone.
        until(lambda: get(f"http://127.0.0.1:{four}/api/v1/snapshot")[0] == 200 and
              str(holder.pid) in get(f"http://127.0.0.1:{four}/api/v1/snapshot?processes=gpu")[1], 10)
        status, body = get(f"http://127.0.0.1:{four}/api/v1/snapshot?processes=gpu")
        light = json.loads(body) if status == 200 else {"processes": [None]}
        status_all, body_all = get(f"http://127.0.0.1:{four}/api/v1/snapshot")
        full = json.loads(body_all) if status_all == 200 else {"processes": []}
        check(status == 200 and [p["pid"] for p in light["processes"]] == [holder.pid] and
              len(full["processes"]) > 10 and light["gpus"][2]["processes"],
              "?processes=gpu: only the process on a GPU (%s of %d)" %
              ([p["pid"] for p in light["processes"]], len(full["processes"])))
        status, body = get(f"http://127.0.0.1:{four}/api/v1/snapshot?processes=gpu&cores=none")
        lighter = json.loads(body) if status == 200 else {"cpu": {"cores": [None]}}
        check(status == 200 and lighter["cpu"].get("cores", []) == [] and full["cpu"].get("cores") and
              lighter["gpus"] and lighter["processes"] == light["processes"],
              "&cores=none: no per-core figures besides")
        for query, words in [("processes=some", "processes="), ("cores=few", "cores=")]:
            status, body = get(f"http://127.0.0.1:{eight}/api/v1/snapshot?" + query, "the-shared-token-of-the-test")
            check(status == 400 and words in body, "?%s: 400 and why (%d %s)" % (query, status, body.strip()))

        config = os.path.join(home, "hosts.toml")
        write(config, f'[top]\ntoken_file = "{shared_token}"\n'
                      f'host_token_files = ["127.0.0.1:{one}={own_token}"]\n', 0o644)
        env = dict(os.environ, BATON_SYSTEM_CONFIG="/dev/null", XDG_CONFIG_HOME=home, NO_COLOR="1")
        names = [f"127.0.0.1:{p}" for p in (four, eight, one, slow.port, dead_port)]
        hosts = ",".join(names)

        # Batch frames every 0.5 s for 8 s; the one-idle agent stopped after 3 s.
        top = subprocess.Popen([BATON, "--config", config, "top", "--hosts", hosts, "--delay", "0.5", "--count",
                                "16", "--timeout", "3s", "--width", "130", "--height", str(HEIGHT)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        arrivals, chunks = [], []

        def reader():
            for line in iter(top.stdout.readline, b""):
                chunks.append(line.decode())
                if line.startswith(b"5 hosts:"):
                    arrivals.append(time.monotonic())
        t = threading.Thread(target=reader)
        t.start()
        started = time.monotonic()
        while time.monotonic() - started < 3 and top.poll() is None:
            time.sleep(0.05)
        stop([one_process])
        try:
            top.wait(30)
        except subprocess.TimeoutExpired:
            top.kill()
        t.join(5)
        err = top.stderr.read().decode()
        check(top.returncode == 0, "top --hosts in batch mode exits 0: " + err.strip())
        frames = frames_of("".join(chunks))
        check(len(frames) == 16, "16 frames (%d)" % len(frames))
        gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
        check(gaps and 0.4 <= statistics.median(gaps) <= 0.65 and max(gaps) < 1.0,
              "a frame every 0.5 s whatever the slow and the dead host do: median %.2f s, longest %.2f s" %
              (statistics.median(gaps) if gaps else 0, max(gaps) if gaps else 0))
        first, last = frames[0] if frames else "", frames[-1] if frames else ""
        check("ok  4 GPUs, 3 free" in line_of(last, names[0]), "four-idle: ok, 3 free GPUs: " + line_of(last, names[0]))
        check("python3 holder.py --gpu 2" in last and last.count("  free\n") == 3,
              "four-idle's GPU 2: our process, with its user and command; its other three GPUs free")
        check("ok  8 GPUs, 0 free" in line_of(last, names[1]),
              "eight-busy, asked with the shared token: ok: " + line_of(last, names[1]))
        check("ok  1 GPU, 1 free" in line_of(first, names[2]),
              "one-idle, asked with its own token, before it stopped: ok: " + line_of(first, names[2]))
        check("down" in line_of(last, names[2]) and "cannot connect" in line_of(last, names[2]),
              "one-idle, stopped mid-test: down, and why: " + line_of(last, names[2]))
        # 1.2 s late, and a little more on a loaded machine: the screen says the time it measured.
        check("ok" in line_of(last, names[3]) and re.search(r"answered in 1\.[2-6] s", line_of(last, names[3])),
              "the slow one: ok, and how slow: " + line_of(last, names[3]))
        check("carol python slow.py" in last, "the slow one's GPU holder, with user and command")
        check("down  cannot connect to 127.0.0.1:%d: Connection refused" % dead_port in line_of(last, names[4]),
              "nothing listening: down, connection refused: " + line_of(last, names[4]))
        check(last.startswith("5 hosts: 3 answering, 2 down  13 GPUs, 3 free"),
              "the title counts hosts and GPUs: " + last.split("\n")[0])
        check(slow.connections == 1 and len(slow.requests) >= 4,
              "the asks of one host reuse one connection: %d connection(s), %d asks" %
              (slow.connections, len(slow.requests)))
        check(any(r.endswith("?processes=gpu&cores=none") for r in slow.requests) and "/api/v1/findings" in slow.requests,
              "each host is asked for its processes on a GPU and its findings")

        # A frozen agent (SIGSTOP: the kernel still accepts the connection, nothing answers): down at the
        # deadline, and the frame comes on time.
        eight_process = agents[1]
        eight_process.send_signal(signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            r = subprocess.run([BATON, "--config", config, "top", "--hosts", f"{names[0]},{names[1]}", "--once",
                                "--timeout", "1s", "--width", "130"], env=env, capture_output=True, text=True,
                               timeout=60)
            took = time.monotonic() - t0
        finally:
            eight_process.send_signal(signal.SIGCONT)
        check(r.returncode == 0 and "down" in line_of(r.stdout, names[1]) and
              "no full answer within 1 s" in line_of(r.stdout, names[1]) and "ok" in line_of(r.stdout, names[0]),
              "a frozen agent: down, no full answer within the deadline: " + line_of(r.stdout, names[1]))
        check(took < 4, "the frame of a frozen host's screen comes after the deadline, not later: %.1f s" % took)

        # Without the tokens: the two agents that want one say so.
        r = subprocess.run([BATON, "top", "--hosts", hosts, "--once", "--width", "130", "--height", "40",
                            "--timeout", "3s"], env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and "unauthorized  the agent wants a token" in line_of(r.stdout, names[1]),
              "no token: unauthorized: " + line_of(r.stdout, names[1]))
        # A wrong shared token: refused too.
        bad = os.path.join(home, "bad.token")
        write(bad, "not-it\n")
        r = subprocess.run([BATON, "top", "--hosts", names[1], "--once", "--token-file", bad], env=env,
                           capture_output=True, text=True, timeout=60)
        check("unauthorized" in line_of(r.stdout, names[1]), "a wrong token: unauthorized")

        # g (--free-gpus): where one can run; [top] hosts when no --hosts; --local: this machine.
        write(config, f'[top]\nhosts = ["{names[0]}", "{names[1]}"]\ntoken_file = "{shared_token}"\n', 0o644)
        r = subprocess.run([BATON, "--config", config, "top", "--once", "--free-gpus", "--width", "120"], env=env,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and r.stdout.startswith("2 hosts: 2 answering") and names[0] in r.stdout and
              names[1] not in r.stdout and r.stdout.count("  free\n") == 3 and "holder.py" not in r.stdout,
              "[top] hosts with --free-gpus: the three free GPUs of four-idle alone")
        r = subprocess.run([BATON, "--config", config, "top", "--once", "--local"], env=env, capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 0 and "PID" in r.stdout and "hosts:" not in r.stdout, "--local: this machine's view")

        # Bad input: one line, non-zero.
        for args, code, words in [
            (["--hosts", ""], 2, "no host given"),
            (["--hosts", "a,,b"], 2, "is not HOST[:PORT]"),
            (["--hosts", "a:99999"], 2, "is not HOST[:PORT]"),
            (["--hosts", "a,a"], 2, "named twice"),
            (["--hosts", "a", "--proc-root", "/"], 2, "excludes"),
            (["--hosts", "a", "--local"], 2, "excludes"),
            (["--hosts", "a", "--timeout", "0s"], 2, "--timeout"),
            (["--hosts", "a", "--token-file", "/nonexistent/token"], 1, "/nonexistent/token"),
            (["--token-file", shared_token, "--local"], 2, "excludes"),
            (["--free-gpus"], 2, "for several hosts"),
        ]:
            r = subprocess.run([BATON, "top", "--once", *args], env=dict(env, XDG_CONFIG_HOME="/nonexistent"),
                               capture_output=True, text=True, timeout=30)
            lines = r.stderr.strip().split("\n")
            check(r.returncode == code and words in r.stderr and len(lines) <= 2,
                  "top %s: exit %d, %r (%d: %s)" % (" ".join(args), code, words, r.returncode, r.stderr.strip()))
        for toml, words in [('[top]\nhosts = 5\n', "top.hosts"),
                            ('[top]\nhost_token_files = ["no-equals"]\n', "HOST[:PORT]=PATH"),
                            ('[top]\nhost_token_files = ["a=/x", "a=/y"]\n', "twice"),
                            ('[top]\nhosts = ["a", "b,c"]\n', "list of hosts")]:
            write(config, toml, 0o644)
            r = subprocess.run([BATON, "--config", config, "top", "--once"], env=env, capture_output=True,
                               text=True, timeout=30)
            check(r.returncode == 1 and words in r.stderr and r.stderr.count("\n") == 1,
                  "config %r: exit 1, one line: %s" % (toml.strip(), r.stderr.strip()))
    finally:
        for f in fakes:
            f.close()
        stop(agents + helpers)
        shutil.rmtree(home, ignore_errors=True)
    return summary("top_hosts_test")


if __name__ == "__main__":
    sys.exit(main())
