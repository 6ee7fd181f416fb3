#!/usr/bin/env python3
"""A stand-in for `baton serve` that answers the same snapshot every time (its time made current), for
the tests of `baton top --hosts` whose frames must not move: golden screens, an agent that answers slowly,
the count of connections a keep-alive client opens. HTTP/1.1 with keep-alive, as the real agent.

The snapshot comes from the real binary (`baton snapshot --json` on the fixture machine and a fake NVML
scenario), with processes added for the GPUs' holders (the fixture's /proc has none), so the schema is
always the one baton writes and reads.

As a program: fake_agent.py BATON NVML_LIBRARY SCENARIO_JSON FIXTURE_DIR PORT_FILE [--delay S] [--owner GPU=USER:COMMAND]...
serves on 127.0.0.1, writes its port to PORT_FILE, and runs until killed.
"""
import http.server
import json
import os
import subprocess
import sys
import threading
import time


def fixture_snapshot(baton, nvml_library, scenario_json, fixture_dir, owners):
    """The snapshot `baton snapshot --json` makes of the fixture machine on `scenario_json`; `owners` maps a
    GPU index to (user, command) of the process NVML lists first on it."""
    env = dict(os.environ, BATON_NVML_LIBRARY=nvml_library, BATON_FAKE_NVML_SCENARIO=scenario_json,
               BATON_SYSTEM_CONFIG="/dev/null", XDG_CONFIG_HOME="/nonexistent")
    r = subprocess.run([baton, "snapshot", "--json", "--proc-root", os.path.join(fixture_dir, "machine", "proc"),
                        "--sys-root", os.path.join(fixture_dir, "machine", "sys")],
                       env=env, capture_output=True, text=True, timeout=60, check=True)
    snap = json.loads(r.stdout)
    for gpu in snap["gpus"]:
        if gpu["index"] not in owners or not gpu.get("processes"):
            continue
        user, command = owners[gpu["index"]]
        first = gpu["processes"][0]
        first["local_pid"] = first["pid"]
        snap["processes"].append({
            "pid": first["pid"], "ppid": 1, "state": "S", "uid": 1000, "user": user, "name": command.split()[0],
            "command": command, "start_time": "2026-01-01T00:00:00.000Z", "cgroup": "/user.slice",
            "cpu_percent": 99, "cpu_seconds_total": 1000, "rss_bytes": 8 << 30, "threads": 12,
            "gpu_memory_bytes": first.get("used_memory_bytes", 0), "gpu_indices": [gpu["index"]]})
    snap["processes"].sort(key=lambda p: p["pid"])
    return snap


class FakeAgent:
    """Serves `snapshot` (a dict) at /api/v1/snapshot and `findings` at /api/v1/findings, each answer
    `delay` seconds late, with a bearer token when `token` is set. Counts connections and requests."""

    def __init__(self, snapshot, findings=(), delay=0.0, token=""):
        self.snapshot, self.findings, self.delay, self.token = snapshot, list(findings), delay, token
        self.connections = 0
        self.requests = []
        agent = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as evhttp

            def setup(self):
                agent.connections += 1
                super().setup()

            def log_message(self, *args):
                pass

            def handle(self):
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went (a printed frame is done): nothing to answer

            def do_GET(self):
                agent.requests.append(self.path)
                time.sleep(agent.delay)
                if agent.token and self.headers.get("Authorization") != "Bearer " + agent.token:
                    return self.answer(401, {"error": "this endpoint needs 'Authorization: Bearer TOKEN'"})
                if self.path.startswith("/api/v1/snapshot"):
                    snap = dict(agent.snapshot)
                    snap["time"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
                    return self.answer(200, snap)
                if self.path == "/api/v1/findings":
                    return self.answer(200, {"schema_version": 1, "findings": agent.findings})
                return self.answer(404, {"error": "no such endpoint"})

            def answer(self, status, doc):
                body = (json.dumps(doc) + "\n").encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def main():
    baton, nvml, scenario, fixture_dir, port_file = sys.argv[1:6]
    delay, owners, findings = 0.0, {}, []
    args = sys.argv[6:]
    while args:
        flag, value = args[0], args[1]
        args = args[2:]
        if flag == "--delay":
            delay = float(value)
        elif flag == "--owner":
            gpu, rest = value.split("=", 1)
            user, command = rest.split(":", 1)
            owners[int(gpu)] = (user, command)
        elif flag == "--finding":
            severity, summary = value.split(":", 1)
            findings.append({"rule": "test_rule", "severity": severity, "subject": "host", "summary": summary})
    agent = FakeAgent(fixture_snapshot(baton, nvml, scenario, fixture_dir, owners), findings, delay)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(agent.port))
    os.rename(port_file + ".tmp", port_file)
    threading.Event().wait()


if __name__ == "__main__":
    main()
