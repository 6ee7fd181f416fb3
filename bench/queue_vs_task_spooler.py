#!/usr/bin/env python3
"""baton's job queue against Debian's task-spooler (tsp), side by side in one run, each with a queue of
its own in a temporary directory.

1. Submit-to-start: LATENCY times (default 50), one job at a time on an idle queue, the time from just
   before the client is started (`baton submit -- CMD`, `tsp CMD`) to the job's first instruction (it
   writes `date +%s%N`). Target (issue 36): baton's p50 <= 10 ms.
2. Throughput: JOBS submissions of `true` (default 1000) as fast as one shell loop sends them, then until
   every one has run; wall time and how many ran. Both run as many jobs at once as the box has CPUs
   (baton: each job's default of 1 CPU; tsp: -S NCPU). Target: baton's wall <= 0.7 x task-spooler's,
   every job run. The floor is printed beside them: the same loop starting /bin/true, which no client
   can beat (on a machine where forking and executing a program costs about what tsp's whole round trip
   does, the 0.7 x target lies below it).
3. The queue's own CPU per job over the throughput run: baton's agent (the `baton serve` process, all its
   threads, and its job starter) against task-spooler's server. Target: baton's <= tsp's. (Each job's
   supervisor, like the tsp client that runs a job, is counted with the jobs, not the queue.)
4. An array: `baton submit --array 1-JOBS -- true`, one call: the time until the client has every id
   (queued; target <= 1 s for 1,000), then until every element ran. task-spooler has no arrays (its
   figure is the loop of step 2).

usage: bench/queue_vs_task_spooler.py [JOBS] [LATENCY]   (after scripts/test.sh, which installs task-spooler)
The baton measured is build/src/cli/baton-portable (what `cmake --install` installs), or $BATON.
Prints the figures and the ratios; exit status 0 when every target is met.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOBS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
LATENCY = int(sys.argv[2]) if len(sys.argv) > 2 else 50
# The binary users install (`cmake --install`, the .deb): baton-portable, whose libstdc++, SQLite and
# ncurses are linked in, so each client starts without loading them; $BATON for another.
BATON = os.environ.get("BATON") or next(
    (p for p in (os.path.join(ROOT, "build/src/cli/baton-portable"), os.path.join(ROOT, "build/src/cli/baton"))
     if os.path.exists(p)), "baton")
TSP = shutil.which("tsp")
NCPU = os.cpu_count()


def wait_for(path, seconds=10):
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            with open(path) as f:
                text = f.read()
            if text.endswith("\n"):
                return int(text)
        except FileNotFoundError:
            pass
        time.sleep(0.0005)
    raise SystemExit("no start seen at " + path)


def latencies(submit, tmp, name):
    out = []
    for i in range(LATENCY + 1):
        mark = os.path.join(tmp, "%s-%d" % (name, i))
        t0 = time.time_ns()
        subprocess.run(submit + ["sh", "-c", "date +%%s%%N > %s.tmp; mv %s.tmp %s" % (mark, mark, mark)],
                       check=True, stdout=subprocess.DEVNULL)
        started = wait_for(mark)
        if i:  # the first one starts tsp's server: left out for both
            out.append((started - t0) / 1e6)
        time.sleep(0.05)  # the job ends; the queue is idle again
    return out


def throughput(submit, pending, ran):
    """JOBS submissions of `true` from one shell loop (`submit`: the words before the command), then until
    pending() says none is left: (wall, submitting, how many ran)."""
    t0 = time.monotonic()
    subprocess.run(["sh", "-c", 'i=0; while [ $i -lt %d ]; do "$@" true >/dev/null || exit 1; i=$((i+1)); done'
                    % JOBS, "sh"] + submit, check=True)
    submitted = time.monotonic() - t0
    while pending():
        time.sleep(0.02)
    return time.monotonic() - t0, submitted, ran()


def cpu_seconds(pids):
    """utime + stime of these processes (all their threads), in seconds; a process gone counts 0."""
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def children_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def tsp_server(socket_path):
    """The task-spooler server of this socket: the `tsp` process whose environment names it and that
    listens (the first one started; its clients come and go)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % d) as f:
                if f.read().strip() != "tsp":
                    continue
            with open("/proc/%s/environ" % d, "rb") as f:
                if ("TS_SOCKET=" + socket_path).encode() not in f.read().split(b"\0"):
                    continue
            found.append(int(d))
        except OSError:
            continue
    return min(found) if found else None


def baton_json(*args):
    return json.loads(subprocess.run([BATON] + list(args), capture_output=True, check=True).stdout)


def throughput_baton():
    return throughput([BATON, "submit", "--"], lambda: baton_json("queue", "--json"),
                      lambda: sum(1 for j in baton_json("queue", "--all", "--json")
                                  if j["state"] == "done" and j["argv"] == ["true"]))


def tsp_listing():
    return subprocess.run([TSP, "-l"], capture_output=True, text=True, check=True).stdout


def throughput_tsp():
    return throughput([TSP], lambda: any(s in tsp_listing() for s in (" queued ", " running ")),
                      lambda: sum(1 for line in tsp_listing().splitlines()
                                  if " finished " in line and line.rstrip().endswith("true") and " 0 " in line))


def main():
    if not TSP:
        # (the GPU machine of scripts/device-check.sh cannot install it: baton alone there)
        print("task-spooler is not installed (scripts/test.sh installs it): baton alone")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, BATON_SOCKET=os.path.join(tmp, "baton.sock"), XDG_STATE_HOME=tmp,
                   XDG_CONFIG_HOME=tmp, BATON_SYSTEM_CONFIG="/dev/null", TS_SOCKET=os.path.join(tmp, "tsp.sock"),
                   TMPDIR=tmp)
        os.environ.update(env)
        agent = subprocess.Popen([BATON, "serve", "--no-http", "--no-gpus"], stderr=subprocess.DEVNULL)
        try:
            until = time.monotonic() + 10
            while not os.path.exists(env["BATON_SOCKET"]) and time.monotonic() < until:
                time.sleep(0.01)
            if TSP:
                subprocess.run([TSP, "-S", str(NCPU)], check=True, stdout=subprocess.DEVNULL)

            print("baton measured: %s" % os.path.relpath(BATON, ROOT))
            b = latencies([BATON, "submit", "--"], tmp, "baton")
            t = latencies([TSP], tmp, "tsp") if TSP else None
            b50 = statistics.median(b)
            print("submit-to-start over %d jobs, one at a time on an idle queue:" % LATENCY)
            print("  baton submit: p50 %.1f ms, p90 %.1f ms, max %.1f ms (target p50 <= 10 ms)"
                  % (b50, statistics.quantiles(b, n=10)[8], max(b)))
            if t:
                t50 = statistics.median(t)
                print("  tsp:          p50 %.1f ms, p90 %.1f ms, max %.1f ms"
                      % (t50, statistics.quantiles(t, n=10)[8], max(t)))
                print("  ratio baton / tsp (p50): %.2f" % (b50 / t50))

            # Throughput: one shell loop submits them all, then each queue runs them to the end.
            agent_pids = [agent.pid] + children_of(agent.pid)  # the agent and its job starter
            cpu0 = cpu_seconds(agent_pids)
            wall_b, submitted_b, ran_b = throughput_baton()
            cpu_b = (cpu_seconds(agent_pids) - cpu0) / JOBS * 1000
            print("%d submissions of `true`, then until all ran (%d at a time):" % (JOBS, NCPU))
            print("  baton: %.2f s wall (submitting %.2f s), %d of %d ran; the agent's CPU %.2f ms per job"
                  % (wall_b, submitted_b, ran_b, JOBS, cpu_b))
            ok = b50 <= 10 and ran_b == JOBS
            if TSP:
                server = tsp_server(env["TS_SOCKET"])
                cpu0 = cpu_seconds([server]) if server else 0
                wall_t, submitted_t, ran_t = throughput_tsp()
                cpu_t = (cpu_seconds([server]) - cpu0) / JOBS * 1000 if server else float("nan")
                print("  tsp:   %.2f s wall (submitting %.2f s), %d of %d ran; its server's CPU %.2f ms per job"
                      % (wall_t, submitted_t, ran_t, JOBS, cpu_t))
                print("  ratio baton / tsp: wall %.2f (target <= 0.7), queue CPU per job %.2f (target <= 1)"
                      % (wall_b / wall_t, cpu_b / cpu_t))
                # What no client can beat: the same loop starting a program that does nothing.
                _, floor, _ = throughput(["/bin/true"], lambda: False, lambda: JOBS)
                print("  floor: the same loop starting /bin/true takes %.2f s (0.7 x tsp's wall is %.2f s)"
                      % (floor, 0.7 * wall_t))
                ok = ok and wall_b <= 0.7 * wall_t and cpu_b <= cpu_t
            # An array: one call queues them all.
            t0 = time.monotonic()
            out = subprocess.run([BATON, "submit", "--array", "1-%d" % JOBS, "--", "true"], check=True,
                                 capture_output=True, text=True).stdout
            queued = time.monotonic() - t0
            ids = set(int(w) for w in out.split())
            while baton_json("queue", "--json"):
                time.sleep(0.02)
            ran_all = time.monotonic() - t0
            done = sum(1 for j in baton_json("queue", "--all", "--json") if j["id"] in ids and j["state"] == "done")
            print("an array of %d (`baton submit --array 1-%d -- true`, one call):" % (JOBS, JOBS))
            print("  queued in %.3f s (target <= 1 s), all ran in %.2f s, %d of %d done" % (queued, ran_all, done, JOBS))
            ok = ok and queued <= 1 and done == JOBS
            print("targets met" if ok else "TARGETS MISSED")
            return 0 if ok else 1
        finally:
            if TSP:
                subprocess.run([TSP, "-K"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            agent.send_signal(signal.SIGTERM)
            agent.wait(10)


if __name__ == "__main__":
    sys.exit(main())
