"""What the Python tests of baton serve share: a check that counts failures, and an agent started on a free
loopback port of its own (the port read from its "serving on" line), stopped by pid."""
import os
import re
import subprocess
import tempfile
import time
import urllib.request

failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failures.append(what)


def until(what, seconds):
    """Whether what() came true within `seconds` (asked every quarter second)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.25)
    return what()


def agent_home(prefix, config_toml):
    """A temporary directory for one agent's state and config (XDG_STATE_HOME and XDG_CONFIG_HOME), other
    users' jobs able to reach it, with `config_toml` as its baton/baton.toml."""
    home = tempfile.mkdtemp(prefix=prefix)
    os.chmod(home, 0o755)
    os.makedirs(os.path.join(home, "baton"))
    with open(os.path.join(home, "baton", "baton.toml"), "w") as f:
        f.write(config_toml)
    return home


def metrics(port):
    """The agent's /metrics text, or "" when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def agent_env(nvml_library, scenario_json, home):
    """The environment of an agent on the fake NVML, with no config and its state in `home`."""
    return dict(os.environ, BATON_NVML_LIBRARY=nvml_library, BATON_FAKE_NVML_SCENARIO=scenario_json,
                BATON_SYSTEM_CONFIG="/dev/null", XDG_CONFIG_HOME=home, XDG_STATE_HOME=home,
                BATON_SOCKET=os.path.join(home, "baton.sock"))


def start_agent(baton, args, env, log_dir=None):
    """Starts `baton serve ARGS --listen 127.0.0.1:0`; returns (process, port), port None if it never listened."""
    log_dir = log_dir or tempfile.mkdtemp(prefix="baton-agent-")
    log = open(os.path.join(log_dir, "serve-%d.log" % time.monotonic_ns()), "w+")
    agent = subprocess.Popen([baton, "serve", "--listen", "127.0.0.1:0"] + args, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(150):
        log.seek(0)
        m = re.search(r"serving on http://127\.0\.0\.1:(\d+)", log.read())
        if m:
            return agent, int(m.group(1))
        if agent.poll() is not None:
            break
        time.sleep(0.1)
    return agent, None


def scenario_agent(baton, nvml_dir, scenarios, scenario, home, *args, extra_env=None):
    """An agent on the fake NVML `scenario` (nvml_dir/SCENARIO/libnvidia-ml.so.1, scenarios/SCENARIO.json),
    sampling every half second without a database, its state in `home` and a socket named after the
    scenario (several agents share one home), with `extra_env` besides; returns (process, port) as
    start_agent."""
    env = agent_env(os.path.join(nvml_dir, scenario, "libnvidia-ml.so.1"),
                    os.path.join(scenarios, scenario + ".json"), home)
    env["BATON_SOCKET"] = os.path.join(home, scenario + ".sock")
    env.update(extra_env or {})
    return start_agent(baton, ["--interval", "0.5", "--no-db", *args], env, home)


def stop(processes):
    """SIGTERM, then SIGKILL after 10 s, to each of `processes`."""
    for p in processes:
        p.terminate()
    for p in processes:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def summary(name):
    print(name + ": " + ("%d check(s) failed" % len(failures) if failures else "every check passed"))
    return 1 if failures else 0
