#!/usr/bin/env python3
"""A queued job that hangs, end to end: `baton serve` (the agent, on the fake NVML, its own socket,
database and loopback port) runs a job of 4 gloo ranks (Debian's python3-torch) started by a shell,
rank 2 blocked reading a pipe while the others wait in all_reduce. The agent gives the job the stack
handler, judges it as `baton launch` does ([launch] hang_seconds = 10 from its config), and its
/metrics then carries rank_hang for "job ID" with the verdict's words; `baton stacks RUN` of the job's
run shows its 4 ranks; cancelling the job ends the finding and every rank.

usage: queued_hang_test.py BATON FAKE_NVML_LIBRARY SCENARIO_JSON SOURCE_DIR
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

from serve_helpers import agent_env, agent_home, check, metrics, start_agent, stop, summary

BATON, NVML, SCENARIO, SOURCE = sys.argv[1:5]
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli", "launch"))
from hang_helpers import SCRIPT, line_of, processes_with  # noqa: E402


def main():
    home = agent_home("baton-queued-hang-", "[launch]\nhang_seconds = 10\n")
    script = os.path.join(home, "hang_ranks.py")
    shutil.copy(SCRIPT, script)
    env = agent_env(NVML, SCENARIO, home)
    agent, port = start_agent(BATON, ["--interval", "0.5"], env, home)
    check(port is not None, "the agent serves")
    if port is None:
        stop([agent])
        return summary("queued_hang_test")
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            master = s.getsockname()[1]
        ranks = " ".join(
            f"RANK={r} WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT={master} /usr/bin/python3 {script} pipe &"
            for r in range(4))
        r = subprocess.run([BATON, "submit", "--name", "hang", "--", "sh", "-c", ranks + " wait"], env=env,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "submit: " + r.stderr.strip())
        job = r.stdout.strip()
        active = f'baton_finding_active{{rule="rank_hang",severity="critical",subject="job {job}"}} 1'
        deadline = time.monotonic() + 120
        text = ""
        while time.monotonic() < deadline and active not in text:
            time.sleep(1)
            text = metrics(port)
        check(active in text, "rank_hang of the job is active in /metrics")
        info = [l for l in text.splitlines() if l.startswith('baton_finding_info{rule="rank_hang"')]
        check(len(info) == 1, "one baton_finding_info for it")
        words = info[0] if info else ""
        check(f"rank 2 is blocked in evaluate() at {script}:{line_of('PIPE_LINE')} with no CPU" in words, words)
        check(f"ranks 0, 1, 3 wait in all_reduce at {script}:{line_of('ALL_REDUCE_LINE')}" in words, words)
        check(re.search(r'baton_findings_total\{rule="rank_hang",severity="critical"\} 1\b', text) is not None,
              "baton_findings_total counts it")
        log = open(os.path.join(home, [n for n in os.listdir(home) if n.startswith("serve-")][0])).read()
        check(f"baton: job {job}: rank_hang: " in log, "the agent's log has the verdict")
        check("stacks only: no Flight Recorder pipe" in log, "and says it judged by the stacks (gloo)")
        # `baton stacks RUN` of the job's run: the job's ranks (below its supervisor), not the agent's.
        shown = subprocess.run([BATON, "show", job, "--json"], env=env, capture_output=True, text=True, timeout=60)
        run = str(json.loads(shown.stdout).get("run_id", "")) if shown.returncode == 0 else ""
        r = subprocess.run([BATON, "stacks", run, "--db", os.path.join(home, "baton", "baton.db")], env=env,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and "4 of 4 processes answered" in r.stdout, "baton stacks of the job's run: " +
              r.stdout + r.stderr)
        r = subprocess.run([BATON, "cancel", job], env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "cancel: " + r.stderr.strip())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (active in metrics(port) or processes_with(script)):
            time.sleep(0.5)
        check(active not in metrics(port), "the finding ends with the job")
        check(processes_with(script) == [], "no rank is left")
    finally:
        stop([agent])
        for pid in processes_with(script):
            os.kill(pid, 9)
        shutil.rmtree(home, ignore_errors=True)
    return summary("queued_hang_test")


if __name__ == "__main__":
    sys.exit(main())
