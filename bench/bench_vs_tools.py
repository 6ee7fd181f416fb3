#!/usr/bin/env python3
"""`baton bench` against the tools it replaces, side by side in one run on this machine:
- net: `baton bench net` against iperf3 on loopback (4 TCP streams each, the same seconds; iperf3 as four
  processes of one stream, since Debian 12's iperf3 3.12 runs all streams of a process on one thread);
- disk: `baton bench disk` against fio on the same directory and file size: cold sequential reads
  (O_DIRECT, 1 MiB, 4 in flight) and cold random reads (O_DIRECT, 128 KiB, 8 in flight), fio
  given the same shapes (psync, numjobs 4 and 8);
- time: `baton bench` with no subcommand, start to end (the target: at most 60 s).
Each figure is printed with baton's over the tool's: near 1.00 means baton measures what the tool
measures. The comparison runs RUNS times (default 3): each run's ratios, then each measure's range of
ratios over the runs, which is what the docs quote (one run says little on a shared machine). GPU figures (h2d, allreduce) are checked on a GPU machine by scripts/device-check.sh
against PyTorch's own copies (nvbandwidth and nccl-tests are not Debian packages).

usage: bench/bench_vs_tools.py [DIR] [SECONDS] [RUNS]   (after scripts/test.sh: iperf3, fio)
DIR: where the disk tests write (default, or "-": a temporary directory under /var/tmp, on a real disk).
The baton measured is build/src/cli/baton-portable, or $BATON. Exit status 0 when every ratio is
within 0.7 to 1.3 and the summary took at most 60 s.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATON = os.environ.get("BATON") or next(
    (p for p in (os.path.join(ROOT, "build/src/cli/baton-portable"), os.path.join(ROOT, "build/src/cli/baton"))
     if os.path.exists(p)), "baton")
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 5
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def baton_json(args, timeout=300):
    r = subprocess.run([BATON, "bench"] + args + ["--json", "--no-db"], capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit(f"baton bench {' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def net():
    server = subprocess.Popen([BATON, "bench", "net", "--listen", "127.0.0.1:0", "--once"], stdout=subprocess.PIPE,
                              text=True)
    port = int(server.stdout.readline().split("127.0.0.1:")[1].split()[0])
    j = baton_json(["net", "--connect", f"127.0.0.1:{port}", "--streams", "4", "--seconds", str(SECONDS)])
    server.wait(timeout=30)
    baton = j["links"][0]["measured"]
    # Four iperf3 processes of one stream each, at once: Debian 12's iperf3 (3.12) sends every stream of
    # one process from one thread, so `-P 4` on loopback measures one core, not four streams.
    ports = [free_port() for _ in range(4)]
    servers = [subprocess.Popen(["iperf3", "-s", "-1", "-p", str(p)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for p in ports]
    time.sleep(0.3)
    clients = [subprocess.Popen(["iperf3", "-c", "127.0.0.1", "-p", str(p), "-t", str(SECONDS), "-J"],
                                stdout=subprocess.PIPE, text=True) for p in ports]
    iperf = 0.0
    for c in clients:
        out, _ = c.communicate(timeout=SECONDS + 60)
        iperf += json.loads(out)["end"]["sum_received"]["bits_per_second"] / 8
    for s in servers:
        s.wait(timeout=30)
    return [("net loopback, 4 streams", baton, iperf, "iperf3 x 4")]


def fio(directory, size, name, rw, bs, jobs):
    path = os.path.join(directory, "fio-test")
    r = subprocess.run(["fio", "--name", name, "--filename", path, "--size", str(size), "--rw", rw, "--bs", bs,
                        "--direct", "1", "--ioengine", "psync", "--numjobs", str(jobs), "--group_reporting",
                        "--runtime", str(SECONDS), "--output-format", "json"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"fio: {r.stderr.strip()}")
    return json.loads(r.stdout)["jobs"][0]["read"]["bw_bytes"]


def disk(directory):
    size = 1 << 30
    j = baton_json(["disk", directory, "--size", "1G", "--seconds-per-test", str(SECONDS)])
    links = {l["link"]: l["measured"] for l in j["links"]}
    seq = fio(directory, size, "seq", "read", "1M", 4)
    rnd = fio(directory, size, "rand", "randread", "128k", 8)
    os.unlink(os.path.join(directory, "fio-test"))
    return [("disk cold sequential 1 MiB x 4", links["disk seq cold"], seq, "fio"),
            ("disk cold random 128 KiB x 8", links["disk random cold"], rnd, "fio")]


def main():
    own = len(sys.argv) <= 1 or sys.argv[1] == "-"
    directory = sys.argv[1] if not own else tempfile.mkdtemp(prefix="baton-bench-", dir="/var/tmp")
    runs = []  # each run: [(name, baton, tool figure, tool)]
    try:
        for _ in range(RUNS):
            runs.append(net() + disk(directory))
        start = time.time()
        r = subprocess.run([BATON, "bench", "--no-db", "--path", directory], capture_output=True, text=True,
                           timeout=300, stdin=subprocess.DEVNULL)
        summary_seconds = time.time() - start
    finally:
        if own:
            shutil.rmtree(directory, ignore_errors=True)
    ok = r.returncode == 0 and summary_seconds <= 60
    ratios = {}
    for k, rows in enumerate(runs, 1):
        print(f"run {k} of {len(runs)}")
        print(f"  {'measure':34} {'baton':>12} {'the tool':>12}  ratio")
        for name, b, t, tool in rows:
            ratio = b / t
            ratios.setdefault(name, []).append(ratio)
            ok = ok and 0.7 <= ratio <= 1.3
            print(f"  {name:34} {b / 1e9:9.2f} GB/s {t / 1e9:9.2f} GB/s  {ratio:.2f} ({tool})")
    print(f"ratio baton / the tool over {len(runs)} runs (accepted: 0.70 to 1.30)")
    for name, rs in ratios.items():
        worst = max(abs(1 - x) for x in rs)
        print(f"  {name:34} {min(rs):.2f} to {max(rs):.2f} (within {100 * worst:.0f} %)")
    print(f"baton bench (no subcommand): {summary_seconds:.1f} s (target: at most 60 s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
