#!/usr/bin/env python3
"""A paused job holds its GPU on purpose: `baton serve` (the agent, on the fake NVML's four idle GPUs, its
own socket, database and loopback port, [thresholds] idle_held_minutes = 0) runs a job of one GPU whose
process sits idle holding GPU memory. Its gpu_idle_held is active in /metrics; `baton pause` of the job
ends it (the process is stopped on purpose, and the queue says so); `baton resume` brings it back; the
cancel ends it for good.

usage: paused_job_test.py BATON FAKE_NVML_LIBRARY SCENARIO_JSON
"""
import json
import os
import shutil
import subprocess
import sys
import time

from serve_helpers import agent_env, agent_home, check, metrics, start_agent, stop, summary, until

BATON, NVML, SCENARIO = sys.argv[1:4]


def main():
    home = agent_home("baton-paused-", "[thresholds]\nidle_held_minutes = 0\nwindow_seconds = 5\n")
    processes = os.path.join(home, "gpu-processes")
    open(processes, "w").close()
    env = agent_env(NVML, SCENARIO, home)
    env["BATON_FAKE_NVML_PROCESSES"] = processes
    agent, port = start_agent(BATON, ["--interval", "0.5"], env, home)
    check(port is not None, "the agent serves")
    if port is None:
        stop([agent])
        return summary("paused_job_test")
    holder = None
    try:
        pid_file = os.path.join(home, "pid")
        r = subprocess.run([BATON, "submit", "--gpus", "1", "--", "sh", "-c", f"echo $$ > {pid_file}; exec sleep 300"],
                           env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "submit: " + r.stderr.strip())
        job = r.stdout.strip()
        check(until(lambda: os.path.exists(pid_file) and open(pid_file).read().endswith("\n"), 30), "the job runs")
        holder = int(open(pid_file).read())
        shown = json.loads(subprocess.run([BATON, "show", job, "--json"], env=env, capture_output=True, text=True,
                                          timeout=60).stdout)
        gpu = shown["gpu_indices"][0]
        with open(processes, "w") as f:  # the job's process holds 4 GiB on its GPU, as a CUDA context would
            f.write(f"{gpu} {holder} {4 << 30}\n")
        active = f'baton_finding_active{{rule="gpu_idle_held",severity="warning",subject="pid:{holder}"}} 1'
        check(until(lambda: active in metrics(port), 60), "gpu_idle_held of the job's idle holder is active")

        r = subprocess.run([BATON, "pause", job], env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and r.stdout == f"job {job}: paused\n", "pause: " + r.stdout + r.stderr)
        check(until(lambda: active not in metrics(port), 10), "paused: no gpu_idle_held for it")
        time.sleep(3)  # several ticks: it stays away while the job is paused
        check(active not in metrics(port), "and it stays away while paused")
        listed = subprocess.run([BATON, "queue"], env=env, capture_output=True, text=True, timeout=60).stdout
        check(any(l.split()[:1] == [job] and "paused" in l for l in listed.splitlines()), "queue says paused: " +
              listed)

        r = subprocess.run([BATON, "resume", job], env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "resume: " + r.stderr.strip())
        check(until(lambda: active in metrics(port), 30), "resumed and idle again: gpu_idle_held is back")

        r = subprocess.run([BATON, "cancel", job], env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "cancel: " + r.stderr.strip())
        open(processes, "w").close()
        check(until(lambda: active not in metrics(port), 30), "the finding ends with the job")
    finally:
        stop([agent])
        if holder:
            try:
                os.kill(holder, 9)
            except OSError:
                pass
        shutil.rmtree(home, ignore_errors=True)
    return summary("paused_job_test")


if __name__ == "__main__":
    sys.exit(main())
