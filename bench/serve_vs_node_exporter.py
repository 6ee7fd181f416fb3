#!/usr/bin/env python3
"""baton serve against Debian's prometheus-node-exporter, side by side in one run, as a user pays for them:
each agent's CPU and peak memory while a real Prometheus (Debian's) scrapes both, at a 1 s and at a 15 s
scrape interval, on a box with IDLE extra idle processes (default 450) and 8 fake GPUs for baton (scenario
eight-busy; node_exporter has no GPU and no per-process data).

For each interval: a fresh baton serve (sampling every 1 s, with its history and live diagnosis), a fresh
node_exporter (default collectors; it reads only when scraped) and a fresh Prometheus scraping both; after
WARM_UP seconds (default 45: baton trusts processes idle for 30 s only after those 30 s, docs/architecture.md)
each agent's CPU time (utime + stime from /proc) over SECONDS (default 120) as a share of one core, and its
peak RSS (VmHWM). Prometheus' own `up` and scrape counts show that both were scraped all along.
Targets, at both intervals: baton <= 0.3 % of a core and <= 15 MB.

Each agent's resident memory (VmRSS) is also read every 10 s of the measured time: the first reading and
the largest of the last quarter show whether it grows (an hour: `... 450 3600 45 1`; target: baton grows
by at most 0.5 MB, its memory being allocated whole at the start).

usage: bench/serve_vs_node_exporter.py [IDLE] [SECONDS] [WARM_UP] [INTERVALS]   (after scripts/test.sh)
INTERVALS: the scrape intervals, comma-separated (default 1,15).
Prints the figures and the ratios; exit status 0 when every target is met.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IDLE = int(sys.argv[1]) if len(sys.argv) > 1 else 450
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 120
WARM_UP = float(sys.argv[3]) if len(sys.argv) > 3 else 45
INTERVALS = tuple(int(x) for x in sys.argv[4].split(",")) if len(sys.argv) > 4 else (1, 15)
GROWTH_MB = 0.5
BATON = os.environ.get("BATON", os.path.join(ROOT, "build/src/cli/baton"))
HZ = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def status_mb(pid, key):
    """A size line of /proc/PID/status (VmHWM: the peak resident size, VmRSS: now), in MB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024 / 1e6
    return 0.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()


def wait_up(url, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            get(url)
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("not answering: " + url)


def query(api, expr):
    r = json.loads(get(api + "query?" + urllib.parse.urlencode({"query": expr})))
    return {s["metric"].get("job", ""): float(s["value"][1]) for s in r["data"]["result"]}


def one_interval(interval, env, tmp):
    """Starts the two agents and a Prometheus scraping both every `interval` seconds; returns the figures."""
    procs = []
    run = os.path.join(tmp, "every-%ds" % interval)
    os.makedirs(run)
    try:
        bport, nport, pport = free_port(), free_port(), free_port()
        agent_env = dict(env, XDG_STATE_HOME=run, BATON_SOCKET=os.path.join(run, "baton.sock"))
        baton = subprocess.Popen([BATON, "serve", "--listen", "127.0.0.1:%d" % bport, "--interval", "1"],
                                 env=agent_env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        procs.append(baton)
        node = subprocess.Popen(["prometheus-node-exporter", "--web.listen-address=127.0.0.1:%d" % nport],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(node)
        wait_up("http://127.0.0.1:%d/metrics" % bport)
        wait_up("http://127.0.0.1:%d/metrics" % nport)
        with open(os.path.join(run, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: %ds\n  scrape_timeout: %ds\n"
                    "scrape_configs:\n"
                    "  - job_name: baton\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                    "  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                    % (interval, min(interval, 10), bport, nport))
        prom = subprocess.Popen(["prometheus", "--config.file=" + os.path.join(run, "prometheus.yml"),
                                 "--storage.tsdb.path=" + os.path.join(run, "prom-data"),
                                 "--web.listen-address=127.0.0.1:%d" % pport],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(prom)
        api = "http://127.0.0.1:%d/api/v1/" % pport
        wait_up(api + "status/buildinfo")
        started = time.monotonic()
        time.sleep(WARM_UP)
        nprocs = len([d for d in os.listdir("/proc") if d.isdigit()])
        t0 = time.monotonic()
        c0 = {p.pid: cpu_seconds(p.pid) for p in (baton, node)}
        rss = {p.pid: [] for p in (baton, node)}  # (seconds into the measurement, MB)
        while True:
            for p in (baton, node):
                rss[p.pid].append((time.monotonic() - t0, status_mb(p.pid, "VmRSS")))
            left = SECONDS - (time.monotonic() - t0)
            if left <= 0:
                break
            time.sleep(min(10, left))
        elapsed = time.monotonic() - t0

        def growth(pid):
            first = rss[pid][0][1]
            last_quarter = [mb for t, mb in rss[pid] if t >= 0.75 * elapsed]
            return first, max(last_quarter), max(last_quarter) - first
        cpu = {p.pid: (cpu_seconds(p.pid) - c0[p.pid]) / elapsed * 100 for p in (baton, node)}
        # What Prometheus saw over the measured time: every scrape of both up, and how many there were.
        window = "%ds" % int(elapsed)
        up = query(api, "min_over_time(up[%s])" % window)
        count = query(api, "count_over_time(up[%s])" % window)
        return {"interval": interval, "processes": nprocs, "seconds": elapsed, "warm_up": t0 - started,
                "baton_cpu": cpu[baton.pid], "node_cpu": cpu[node.pid],
                "baton_rss": status_mb(baton.pid, "VmHWM"), "node_rss": status_mb(node.pid, "VmHWM"),
                "baton_growth": growth(baton.pid), "node_growth": growth(node.pid),
                "up": up, "scrapes": count}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def main():
    for tool in ("prometheus", "prometheus-node-exporter"):
        if not shutil.which(tool):
            raise SystemExit("%s is not installed (scripts/test.sh installs it)" % tool)
    tmp = tempfile.mkdtemp(prefix="baton-bench-")
    idle = []
    try:
        for _ in range(IDLE):
            idle.append(subprocess.Popen(["sleep", "3600"]))
        # Eight busy GPUs whose processes are real processes of this box (eight of the idle ones), as
        # on a machine where trainers run: the scenario's own pids would not exist here, and baton
        # would then look for them through every process's open files (its container path).
        scenario = json.load(open(os.path.join(ROOT, "tests/fake_nvml/scenarios/eight-busy.json")))
        for d in scenario["devices"]:
            d["values"]["processes"] = []
            for t in d.get("ticks", []):
                t.pop("processes", None)
        with open(os.path.join(tmp, "scenario.json"), "w") as f:
            json.dump(scenario, f)
        with open(os.path.join(tmp, "gpu-processes"), "w") as f:
            for gpu in range(8):
                f.write("%d %d %d\n" % (gpu, idle[gpu].pid, 60 * 2**30))
        env = dict(os.environ,
                   BATON_NVML_LIBRARY=os.path.join(ROOT, "build/tests/fake_nvml/eight-busy/libnvidia-ml.so.1"),
                   BATON_FAKE_NVML_SCENARIO=os.path.join(tmp, "scenario.json"),
                   BATON_FAKE_NVML_PROCESSES=os.path.join(tmp, "gpu-processes"),
                   BATON_SYSTEM_CONFIG="/dev/null", XDG_CONFIG_HOME=tmp)
        results = [one_interval(i, env, tmp) for i in INTERVALS]
        ok = True
        print("each agent scraped by a real Prometheus; CPU %% of one core and peak RSS over %.0f s, after %.0f s "
              "running" % (SECONDS, WARM_UP))
        for r in results:
            scraped = all(r["up"].get(j) == 1 for j in ("baton", "node"))
            print("scrape every %2d s, %d processes: Prometheus scraped baton %d times, node_exporter %d (all up: %s)"
                  % (r["interval"], r["processes"], r["scrapes"].get("baton", 0), r["scrapes"].get("node", 0),
                     "yes" if scraped else "NO"))
            print("  baton serve (sampling every 1 s: 8 GPUs, every process, history, diagnosis) %6.3f %% CPU %6.1f MB"
                  % (r["baton_cpu"], r["baton_rss"]))
            print("  node_exporter (reads when scraped: no GPU, no processes)                  %6.3f %% CPU %6.1f MB"
                  % (r["node_cpu"], r["node_rss"]))
            print("  baton / node_exporter: CPU %.2f x, RSS %.2f x (targets: baton <= 0.3 %% and <= 15 MB)"
                  % (r["baton_cpu"] / r["node_cpu"] if r["node_cpu"] else float("inf"),
                     r["baton_rss"] / r["node_rss"] if r["node_rss"] else float("inf")))
            for who, key in (("baton serve", "baton_growth"), ("node_exporter", "node_growth")):
                first, late, grew = r[key]
                print("  %-13s resident %.1f MB at the start of the %.0f s, at most %.1f MB in its last quarter: "
                      "%+.1f MB" % (who, first, r["seconds"], late, grew))
            ok = (ok and scraped and r["baton_cpu"] <= 0.3 and r["baton_rss"] <= 15
                  and r["baton_growth"][2] <= GROWTH_MB)
        print("targets met" if ok else "TARGET MISSED")
        return 0 if ok else 1
    finally:
        for p in idle:
            p.terminate()
        for p in idle:
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
