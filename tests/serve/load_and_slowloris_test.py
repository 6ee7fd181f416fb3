#!/usr/bin/env python3
"""baton serve under load and under attack, on loopback.

- Load: 50 concurrent clients (keep-alive connections) ask /metrics and /api/v1/snapshot for 10 s: every
  answer is a 200, and the latencies (p50, p99) are printed.
- Slowloris: 1,000 connections that send half a request and then nothing: the agent keeps answering
  /metrics during the attack, its resident memory stays bounded, and it closes the idle connections after
  its timeout (10 s).

usage: load_and_slowloris_test.py BATON FAKE_NVML_LIB SCENARIO_JSON
"""
import http.client
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from serve_helpers import agent_env, check, start_agent, stop, summary

BATON, NVML, SCENARIO = sys.argv[1:4]


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def get(port, path, timeout=5):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    tmp = tempfile.mkdtemp(prefix="baton-load-")
    agent, port = start_agent(BATON, [], agent_env(NVML, SCENARIO, tmp), tmp)
    try:
        check(port is not None, "baton serve listens")
        if port is None:
            return
        time.sleep(2)

        # Load: 50 clients, 10 s.
        latencies, errors = [], []
        lock = threading.Lock()
        until = time.monotonic() + 10

        def client(n):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            paths = ["/metrics", "/api/v1/snapshot"]
            i = n
            while time.monotonic() < until:
                path = paths[i % 2]
                i += 1
                t = time.monotonic()
                try:
                    c.request("GET", path)
                    r = c.getresponse()
                    r.read()
                    ok = r.status == 200
                except (OSError, http.client.HTTPException) as e:
                    ok = False
                    c.close()
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                    r = e
                with lock:
                    if ok:
                        latencies.append(time.monotonic() - t)
                    else:
                        errors.append("%s: %s" % (path, getattr(r, "status", r)))
            c.close()

        threads = [threading.Thread(target=client, args=(n,)) for n in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        latencies.sort()
        if latencies:
            p50 = statistics.median(latencies) * 1000
            p99 = latencies[int(len(latencies) * 0.99)] * 1000
            print("load: %d answers in 10 s from 50 clients: p50 %.1f ms, p99 %.1f ms" % (len(latencies), p50, p99))
        check(len(latencies) > 500 and not errors,
              "50 clients for 10 s: %d answers, %d errors %s" % (len(latencies), len(errors), errors[:3]))

        # Slowloris: 1,000 half-sent requests, held open.
        before = rss_mib(agent.pid)
        idle = []
        for _ in range(1000):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            idle.append(s)
        time.sleep(1)
        t = time.monotonic()
        status, body = get(port, "/metrics")
        took = time.monotonic() - t
        check(status == 200 and b"baton_gpu_utilization_ratio" in body,
              "/metrics answers in %.3f s with 1,000 idle connections open" % took)
        during = rss_mib(agent.pid)
        print("resident memory: %.1f MiB before, %.1f MiB with 1,000 idle connections" % (before, during))
        check(during - before < 32, "memory stays bounded (+%.1f MiB for 1,000 connections)" % (during - before))
        check(agent.poll() is None, "the agent is still running")
        # The agent closes them after its 10 s timeout.
        deadline = time.monotonic() + 25
        closed = 0
        for s in idle:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = s.recv(4096)
                closed += 1 if data == b"" or data.startswith(b"HTTP/1.1 4") else 0
            except OSError:
                pass
            s.close()
        check(closed == 1000, "the agent closed %d of the 1,000 idle connections by itself" % closed)
        status, _ = get(port, "/metrics")
        check(status == 200, "and answers as before")
    finally:
        stop([agent])
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
    sys.exit(summary("load and slowloris"))
