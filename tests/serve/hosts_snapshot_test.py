#!/usr/bin/env python3
"""`baton snapshot --hosts` against real agents on loopback: two `baton serve` on different fake NVML
scenarios (one wanting a bearer token), one stopped, and one "agent" that accepts and never answers. Every
host is asked at once, each on its own deadline: the whole call takes about one timeout, not the sum; each
host is said ok, down or unauthorized with its snapshot or why; a bad --hosts is one line and exit 2.

usage: hosts_snapshot_test.py BATON FAKE_NVML_DIR SCENARIOS_DIR
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

from serve_helpers import agent_home, check, scenario_agent, stop, summary

BATON, NVML_DIR, SCENARIOS = sys.argv[1:4]


def snapshot(env, *args, timeout=60):
    t = time.monotonic()
    r = subprocess.run([BATON, "snapshot", *args], env=env, capture_output=True, text=True, timeout=timeout)
    return r, time.monotonic() - t


def main():
    home = agent_home("baton-hosts-", "")
    token_file = os.path.join(home, "token")
    with open(token_file, "w") as f:
        f.write("s3cret-token-for-the-test\n")
    os.chmod(token_file, 0o600)
    agents = []
    silent = socket.socket()
    try:
        def agent(scenario, *args):
            p, port = scenario_agent(BATON, NVML_DIR, SCENARIOS, scenario, home, *args)
            agents.append(p)
            return p, port
        _, four = agent("four-idle")
        _, eight = agent("eight-busy", "--token-file", token_file)
        gone, gone_port = agent("one-idle")
        check(None not in (four, eight, gone_port), "three agents serve")
        stop([gone])
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts (the kernel does) and never answers
        slow_port = silent.getsockname()[1]
        time.sleep(1.5)  # a sample or two in each

        env = dict(os.environ, BATON_SYSTEM_CONFIG="/dev/null", XDG_CONFIG_HOME=home)
        hosts = f"127.0.0.1:{four},127.0.0.1:{eight},127.0.0.1:{gone_port},127.0.0.1:{slow_port}"
        r, took = snapshot(env, "--hosts", hosts, "--json", "--token-file", token_file, "--timeout", "2s")
        check(r.returncode == 0, "snapshot --hosts --json: " + r.stderr.strip())
        doc = json.loads(r.stdout) if r.returncode == 0 else {"hosts": []}
        by = {h["host"]: h for h in doc["hosts"]}
        check([h["host"] for h in doc["hosts"]] == hosts.split(","), "every host, in the order given")
        a, b = by.get(f"127.0.0.1:{four}", {}), by.get(f"127.0.0.1:{eight}", {})
        check(a.get("status") == "ok" and len((a.get("snapshot") or {}).get("gpus", [])) == 4,
              "the four-GPU agent: ok, its 4 GPUs")
        check(b.get("status") == "ok" and len((b.get("snapshot") or {}).get("gpus", [])) == 8,
              "the agent with a token, asked with it: ok, its 8 GPUs")
        c, d = by.get(f"127.0.0.1:{gone_port}", {}), by.get(f"127.0.0.1:{slow_port}", {})
        check(c.get("status") == "down" and c.get("snapshot") is None and c.get("error"),
              "the stopped agent: down, and why: %s" % c.get("error"))
        check(d.get("status") == "down" and d.get("seconds", 0) >= 1.9, "the silent one: down at its deadline: %s" % d)
        check(took < 2 + 1.5, "all asked at once: %.1f s for a 2 s deadline, not the sum" % took)

        r, _ = snapshot(env, "--hosts", f"127.0.0.1:{eight}", "--json")
        doc = json.loads(r.stdout) if r.stdout else {"hosts": [{}]}
        check(r.returncode == 1 and doc["hosts"][0].get("status") == "unauthorized",
              "without the token: unauthorized, exit 1 (no host answered): %s" % doc["hosts"][0].get("error"))

        r, _ = snapshot(env, "--hosts", f"127.0.0.1:{four},127.0.0.1:{gone_port}")
        check(r.returncode == 0 and f"== 127.0.0.1:{four} (http://127.0.0.1:{four}): ok" in r.stdout and
              f"== 127.0.0.1:{gone_port} (http://127.0.0.1:{gone_port}): down" in r.stdout and "GPU" in r.stdout,
              "the text: each host's line, and the summary of the one that answered")

        for bad in ("", ",", "a:0", "a:99999", "a b", "[zz]", "a,a", "a:", "[::1", "a:12x"):
            r, _ = snapshot(env, "--hosts", bad)
            check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and r.stdout == "",
                  f"--hosts {bad!r}: exit 2, one line: {r.stderr.strip()}")
        r, _ = snapshot(env, "--hosts", "a", "--prometheus")
        check(r.returncode == 2, "--hosts with --prometheus: refused")
        r, _ = snapshot(env, "--token-file", token_file)
        check(r.returncode == 2, "--token-file without --hosts: refused")
    finally:
        stop(agents)
        silent.close()
        shutil.rmtree(home, ignore_errors=True)
    return summary("hosts_snapshot_test")


if __name__ == "__main__":
    sys.exit(main())
