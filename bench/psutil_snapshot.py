#!/usr/bin/python3
"""The psutil side of bench/snapshot_cost.sh: the same work as `baton snapshot --json`
(system + every process, printed as JSON Lines), ITERATIONS times back to back.
psutil has no GPU support; the GPU part is not counted on this side."""
import json
import os
import sys

import psutil

ATTRS = ["pid", "ppid", "uids", "username", "status", "name", "cmdline", "create_time",
         "cpu_percent", "memory_info", "num_threads", "io_counters"]


def snapshot(procs_only_system):
    snap = {
        "cpu": psutil.cpu_times_percent(percpu=False)._asdict(),
        "cores": [c._asdict() for c in psutil.cpu_times_percent(percpu=True)],
        "load_average": os.getloadavg(),
        "cpu_stats": psutil.cpu_stats()._asdict(),
        "memory": psutil.virtual_memory()._asdict(),
        "swap": psutil.swap_memory()._asdict(),
        "disks": {k: v._asdict() for k, v in psutil.disk_io_counters(perdisk=True).items()},
        "networks": {k: v._asdict() for k, v in psutil.net_io_counters(pernic=True).items()},
        "shm": psutil.disk_usage("/dev/shm")._asdict(),
    }
    if not procs_only_system:
        procs = []
        for p in psutil.process_iter(ATTRS, ad_value=None):
            info = p.info
            procs.append({
                "pid": info["pid"], "ppid": info["ppid"], "user": info["username"],
                "state": info["status"], "name": info["name"],
                "command": " ".join(info["cmdline"] or []),
                "start_time": info["create_time"], "cpu_percent": info["cpu_percent"],
                "rss_bytes": info["memory_info"].rss if info["memory_info"] else None,
                "threads": info["num_threads"],
                "io": info["io_counters"]._asdict() if info["io_counters"] else None,
            })
        snap["processes"] = procs
    return snap


def main():
    iterations = int(sys.argv[1])
    system_only = len(sys.argv) > 2 and sys.argv[2] == "--no-processes"
    out = sys.stdout
    for _ in range(iterations):
        out.write(json.dumps(snapshot(system_only)))
        out.write("\n")


if __name__ == "__main__":
    main()
