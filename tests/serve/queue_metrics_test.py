#!/usr/bin/env python3
"""The queue in /metrics: `baton serve` (the agent, on the fake NVML's four idle GPUs, its own socket,
database and loopback port) runs a job that fails and one that succeeds. /metrics counts the open jobs
by state while one runs, the ended ones by final state (every state there from the start at 0), and
has one end event per job (baton_queue_job_ended_timestamp_seconds, naming it) that
deploy/prometheus/baton-rules.yml's BatonQueuedJobFailed turns into an alert; the exposition passes
promtool's check.

usage: queue_metrics_test.py BATON FAKE_NVML_LIBRARY SCENARIO_JSON
"""
import os
import re
import shutil
import subprocess
import sys
import time

from serve_helpers import agent_env, agent_home, check, metrics, start_agent, stop, summary, until

BATON, NVML, SCENARIO = sys.argv[1:4]


def main():
    home = agent_home("baton-queue-metrics-", "")
    env = agent_env(NVML, SCENARIO, home)
    agent, port = start_agent(BATON, ["--interval", "0.5"], env, home)
    check(port is not None, "the agent serves")
    if port is None:
        stop([agent])
        return summary("queue_metrics_test")
    try:
        text = metrics(port)
        for state in ("done", "failed", "cancelled", "lost"):
            check(f'baton_queue_jobs_ended_total{{state="{state}"}} 0' in text, f"ended {state} at 0 from the start")
        check('baton_queue_jobs{state="queued"} 0' in text, "no open job yet")

        def submit(*args):
            r = subprocess.run([BATON, "submit", *args], env=env, capture_output=True, text=True, timeout=60)
            check(r.returncode == 0, "submit: " + r.stderr.strip())
            return r.stdout.strip()

        flag = os.path.join(home, "go")
        runner = submit("--name", "waits", "--", "sh", "-c", f"while [ ! -e {flag} ]; do sleep 0.1; done")
        check(until(lambda: 'baton_queue_jobs{state="running"} 1' in metrics(port), 30), "one job running")
        open(flag, "w").close()
        failing = submit("--name", "bad \"name\"", "--", "sh", "-c", "exit 3")
        for job in (runner, failing):
            subprocess.run([BATON, "wait", job], env=env, capture_output=True, timeout=60)
        user = subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
        event = re.compile(r'baton_queue_job_ended_timestamp_seconds\{id="' + failing +
                           r'",name="bad \\"name\\"",user="' + user + r'",state="failed",exit_status="3"\} ([0-9.e+]+)')
        check(until(lambda: event.search(metrics(port)) is not None, 30), "the failed job's end event: " +
              "\n".join(l for l in metrics(port).splitlines() if "queue" in l))
        text = metrics(port)
        m = event.search(text)
        if m:
            check(abs(float(m.group(1)) - time.time()) < 60, "its value is the end's Unix time")
        check('baton_queue_jobs_ended_total{state="failed"} 1' in text, "one failed")
        check('baton_queue_jobs_ended_total{state="done"} 1' in text, "one done")
        check(f'id="{runner}",name="waits",user="{user}",state="done",exit_status="0"' in text, "the done one's event")
        check('baton_queue_jobs{state="running"} 0' in text, "none running")
        promtool = shutil.which("promtool")
        if promtool:
            r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
            problems = [l for l in (r.stdout + r.stderr).splitlines() if "baton_queue" in l]
            check(not problems, "promtool finds nothing wrong with the queue's families: " + "\n".join(problems))
    finally:
        stop([agent])
        shutil.rmtree(home, ignore_errors=True)
    return summary("queue_metrics_test")


if __name__ == "__main__":
    sys.exit(main())
