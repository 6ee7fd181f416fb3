#!/usr/bin/env python3
"""`baton usage` against a real agent (`baton serve` on the fake NVML: four H100s whose utilisation and SM
activity are held at 60 % and 30 %, its own socket, database and loopback port, a sample every 0.5 s):
a queued job of two GPUs and one CPU, and a `baton run` outside the queue whose command holds a third GPU
(its DataLoader-like child with it). When both have ended, each job's GPU-hours are twice (the queue's) and
once (the holder's) the time the samples saw it, and the busy hours are 60 % of those and the SM 30 %,
exactly; the holder counts for its owner; `--user`, `--since`, `--db` and the text table agree; bad flags
get one line and exit 2.

usage: usage_test.py BATON FAKE_NVML_LIBRARY SCENARIO_JSON
"""
import json
import os
import re
import pwd
import shutil
import signal
import subprocess
import sys

from serve_helpers import agent_env, agent_home, check, start_agent, stop, summary, until

BATON, NVML, SCENARIO = sys.argv[1:4]
UTIL, SM = 60, 30


def documented_usage():
    """The columns and JSON keys docs/queue.md's Usage section documents: its table's "`COLUMN` / `key`"
    cells and the users' paragraph under it."""
    doc = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "queue.md")).read()
    section = doc[doc.index("## Usage"):]
    section = section[:section.index("\n## ", 10)]
    columns, keys = set(), set()
    for line in section.splitlines():
        if line.startswith("| `"):
            for n in re.findall(r"`([^`]+)`", line.split(" | ")[0][2:]):
                (columns if n.isupper() else keys).add(n)
    users = section[section.index("The users' table"):]
    users = users[:users.index("\n\n")]
    for n in re.findall(r"`([^`]+)`", users):
        (columns if n.isupper() else keys).add(n)
    return columns, keys - {"users", "since_ms"}  # the answer's own keys, not a user's


def usage(env, *args):
    return subprocess.run([BATON, "usage", *args], env=env, capture_output=True, text=True, timeout=60)


def usage_json(env, *args):
    r = usage(env, "--json", *args)
    return json.loads(r.stdout) if r.returncode == 0 else None


def job_of(doc, label):
    for j in (doc or {}).get("jobs", []):
        if j["label"] == label:
            return j
    return None


def end_holder(holder, pid_file):
    """Ends `baton run` and its command's process group (baton run gives the command a group of its own)."""
    try:
        os.killpg(int(open(pid_file).read()), signal.SIGKILL)
    except (OSError, ValueError):
        pass
    if holder.poll() is None:
        os.killpg(holder.pid, signal.SIGKILL)
    holder.wait()


def near(a, b, tolerance=1e-6):
    return abs(a - b) <= tolerance * max(1.0, abs(b))


def main():
    home = agent_home("baton-usage-", "")
    scenario = json.load(open(SCENARIO))
    for d in scenario["devices"]:
        d["values"].update({"utilization_gpu": UTIL, "gpm_supported": 1, "sm_activity": float(SM)})
    scenario_path = os.path.join(home, "scenario.json")
    json.dump(scenario, open(scenario_path, "w"))
    processes = os.path.join(home, "gpu-processes")
    open(processes, "w").close()
    env = agent_env(NVML, scenario_path, home)
    env["BATON_FAKE_NVML_PROCESSES"] = processes
    agent, port = start_agent(BATON, ["--interval", "0.5"], env, home)
    check(port is not None, "the agent serves")
    me = pwd.getpwuid(os.getuid()).pw_name
    holder = None
    try:
        # Outside the queue: `baton run` of a command (with a child) that holds GPU 3 while the job runs.
        pid_file = os.path.join(home, "holder.pid")
        holder = subprocess.Popen([BATON, "run", "--no-db", "--", "sh", "-c",
                                   f"echo $$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; sleep 300 & wait"],
                                  env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        check(until(lambda: os.path.exists(pid_file), 30), "baton run started its command")
        with open(processes, "w") as f:
            f.write(f"3 {open(pid_file).read().strip()} {2 << 30}\n")
        r = subprocess.run([BATON, "submit", "--gpu", "0,1", "--cpus", "1", "--", "sleep", "4"],
                           env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "submit: " + r.stderr.strip())
        job = r.stdout.strip()
        # Live: while it runs (long before the agent's minute write), with what the samples saw so far.
        running = lambda: (job_of(usage_json(env), "queue:" + job) or {})
        check(until(lambda: running().get("ended") is False and running().get("gpu_seconds", 0) > 0, 3),
              "while it runs, it is there and counting: %s" % running())
        r = subprocess.run([BATON, "wait", job], env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "the job ran: " + r.stderr.strip())
        end_holder(holder, pid_file)
        open(processes, "w").close()

        label = "queue:" + job
        holder_label = "user:" + me
        check(until(lambda: (job_of(usage_json(env), label) or {}).get("ended") and
                    (job_of(usage_json(env), holder_label) or {}).get("ended"), 30),
              "both jobs are recorded as ended")
        doc = usage_json(env)
        q, h = job_of(doc, label), job_of(doc, holder_label)
        if q and h:
            check(q["kind"] == "queue" and q["user"] == me and q["gpus"] == 2 and q["cpus"] == 1,
                  "the queued job: its owner, 2 GPUs and 1 CPU: %s" % q)
            check(3 <= q["seconds"] <= 6, "its samples saw it about 4 s: %s" % q["seconds"])
            check(near(q["gpu_seconds"], 2 * q["seconds"]), "GPU-seconds = 2 GPUs x the seconds seen")
            check(near(q["gpu_busy_seconds"], UTIL / 100 * q["gpu_seconds"]), "busy = 60 % of them, exactly")
            check(near(q["sm_busy_seconds"], SM / 100 * q["sm_seconds"]) and near(q["sm_seconds"], q["gpu_seconds"]),
                  "SM-busy = 30 % of the GPU-seconds")
            check(near(q["gpu_efficiency"], UTIL / 100) and near(q["sm_activity"], SM / 100), "efficiency 0.6, SM 0.3")
            check(near(q["cpu_seconds_allocated"], q["seconds"]), "CPU-seconds allocated = 1 CPU x the seconds")
            check(q["cpu_seconds"] < 1 and q["cpu_efficiency"] is not None and q["cpu_efficiency"] < 0.3,
                  "sleep used next to no CPU: %s" % q["cpu_efficiency"])
            check(q["gpu_memory_total_bytes"] > 0, "its GPUs' memory is known")
            check(h["kind"] == "user" and h["gpus"] == 1, "the holder outside the queue counts for its owner, 1 GPU")
            check(near(h["gpu_seconds"], h["seconds"]) and near(h["gpu_busy_seconds"], UTIL / 100 * h["seconds"]),
                  "its GPU-seconds and busy seconds likewise")
            check(h["cpus"] is None and h["cpu_efficiency"] is None, "no CPUs allocated outside the queue")
            check(h["memory_peak_bytes"] > 0, "its processes' memory (the child's too)")
        users = {u["user"]: u for u in (doc or {}).get("users", [])}
        check(me in users and users[me]["jobs"] == 2, "one line for the owner, with both jobs: %s %s" % (
            users, [(j["label"], j["user"], j["gpus"], j["seconds"]) for j in (doc or {}).get("jobs", [])]))
        if q and h and me in users:
            check(near(users[me]["gpu_seconds"], q["gpu_seconds"] + h["gpu_seconds"], 1e-4),
                  "the user's GPU-hours are the jobs' sum")

        check(usage_json(env, "--user", "nobody-here")["jobs"] == [], "--user of someone else: none of these")
        text = usage(env)
        # docs/queue.md#usage is the contract: every documented column is in the table's headers, every
        # documented key in the JSON (the jobs', or the users' for the users' table).
        if q and me in users:
            columns, keys = documented_usage()
            check(len(columns) >= 14 and len(keys) >= 20, "the docs' table was read: %s %s" % (columns, keys))
            headers = " ".join(line for line in text.stdout.splitlines() if line.startswith(("USER ", "JOB ")))
            for c in columns:
                check(c in headers, "the documented column %r is in the table's headers: %s" % (c, headers))
            for k in keys:
                check(k in q or k in users[me], "the documented key %r is in the JSON: %s / %s" % (
                    k, sorted(q), sorted(users[me])))
            for k in list(q) + list(users[me]):
                check(k in keys, "the JSON's key %r is documented" % k)
        check(text.returncode == 0 and "USER" in text.stdout and label in text.stdout and "60%" in text.stdout,
              "the text table: " + text.stdout)
        # --since 1m still holds them; the agent's file read directly says the same.
        check(job_of(usage_json(env, "--since", "1m"), label) is not None, "--since 1m holds the job")
        db = os.path.join(home, "baton", "baton.db")  # the agent's history (XDG_STATE_HOME/baton)
        direct = usage_json(env, "--db", db)
        check(direct is not None and job_of(direct, label) == q,
              "--db reads the same record from the file: %s %s" % (db, job_of(direct or {}, label)))

        for bad in (["--since", "-1"], ["--since", "soon"], ["--since", "0"], ["--db"], ["--bogus"]):
            r = usage(env, *bad)
            check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and r.stdout == "",
                  f"usage {' '.join(bad)}: exit 2 with one line: {r.returncode} {r.stderr.strip()}")
        r = usage(env, "--db", os.path.join(home, "none.db"))
        check(r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, "a --db that is not there: " + r.stderr)
    finally:
        stop([agent])
        if holder:
            end_holder(holder, os.path.join(home, "holder.pid"))
    # Without an agent: one line that says so.
    r = usage(env)
    check(r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1, "no agent: " + r.stderr.strip())
    shutil.rmtree(home, ignore_errors=True)
    return summary("usage_test")


if __name__ == "__main__":
    sys.exit(main())
