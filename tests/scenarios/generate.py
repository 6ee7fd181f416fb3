#!/usr/bin/env python3
"""Generates the synthetic half of the diagnosis scenario corpus: for each scenario below, a
stream of snapshots (JSON Lines in the schema of docs/snapshot-schema.md, 16 snapshots 2 s
apart: a 30 s window) and NAME.expect, the exact set of rule ids `baton diagnose --replay` must
report (one per line; empty for a healthy run).

Usage: tests/scenarios/generate.py [OUTPUT_DIR]   (default: this directory)
The recorded half (recorded-*.jsonl) comes from real runs of `baton snapshot --json`."""
import copy
import json
import os
import sys

START_MS = 1764400000000  # 2025-11-29T07:06:40Z
TICKS = 16
STEP_S = 2
GIB = 1 << 30


def rfc3339(ms):
    import datetime
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def proc(pid, ppid, name, cpu, user="alice", uid=1000, age_s=3600, rss=512 << 20, command=None):
    return {"pid": pid, "ppid": ppid, "state": "S", "uid": uid, "user": user, "name": name,
            "command": command or name, "start_time": rfc3339(START_MS - age_s * 1000),
            "cgroup": "/user.slice", "cpu_percent": cpu, "rss_bytes": rss, "threads": 4,
            "read_bytes_per_second": 0, "write_bytes_per_second": 0}


def gpu(index, util, mem_percent, processes=()):
    total = 140 * GIB
    return {"index": index, "uuid": f"GPU-0000000{index}-0000-4000-8000-000000000000", "name": "NVIDIA H200",
            "pci_bus_id": f"00000000:{0x18 + index:02X}:00.0", "stale": False, "utilization_percent": util,
            "memory_utilization_percent": util / 2, "memory_total_bytes": total,
            "memory_used_bytes": int(total * mem_percent / 100), "memory_free_bytes": total - int(total * mem_percent / 100),
            "temperature_celsius": 60, "power_watts": 500, "power_limit_watts": 700,
            "throttle_reasons": [], "pcie_generation": 5, "pcie_generation_max": 5, "pcie_width": 16,
            "pcie_width_max": 16, "ecc_uncorrected_volatile": 0, "persistence_mode": True,
            "compute_mode": "default", "mig_mode": False,
            "processes": [{"pid": pid, "type": "compute", "used_memory_bytes": int(mem * GIB), "sm_utilization_percent": sm}
                          for pid, mem, sm in processes]}


def healthy(i):
    """An 8-core box training on GPU0: trainer 100 (under bash 50) with 4 DataLoader workers."""
    return {
        "schema_version": 1, "time": rfc3339(START_MS + i * STEP_S * 1000), "interval_seconds": STEP_S,
        "host": {"hostname": "train-01", "kernel": "6.1.0-27-amd64", "cpu_count": 8, "uptime_seconds": 86400 + i * STEP_S},
        "cpu": {"utilization_percent": 50, "user_percent": 45, "system_percent": 5, "iowait_percent": 0.5,
                "steal_percent": 0, "idle_percent": 49.5, "load_average": [4.1, 4.0, 3.9],
                "context_switches_per_second": 20000, "runnable_tasks": 5, "blocked_tasks": 0,
                "cores": [{"id": c, "utilization_percent": 50, "iowait_percent": 0.5} for c in range(8)]},
        "memory": {"total_bytes": 64 * GIB, "available_bytes": 40 * GIB, "used_bytes": 24 * GIB, "free_bytes": 30 * GIB,
                   "cached_bytes": 10 * GIB, "buffers_bytes": GIB // 4, "shared_bytes": 2 * GIB,
                   "shm_total_bytes": 32 * GIB, "shm_used_bytes": 2 * GIB},
        "swap": {"total_bytes": 8 * GIB, "used_bytes": 0, "in_bytes_per_second": 0, "out_bytes_per_second": 0,
                 "major_faults_per_second": 0, "oom_kill_total": 0},
        "pressure": {"cpu": {"some": {"avg10": 1, "avg60": 1, "avg300": 1, "total_microseconds": 1000}},
                     "memory": {"some": {"avg10": 0, "avg60": 0, "avg300": 0, "total_microseconds": 0},
                                "full": {"avg10": 0, "avg60": 0, "avg300": 0, "total_microseconds": 0}},
                     "io": {"some": {"avg10": 0, "avg60": 0, "avg300": 0, "total_microseconds": 0},
                            "full": {"avg10": 0, "avg60": 0, "avg300": 0, "total_microseconds": 0}}},
        "disks": [{"name": "nvme0n1", "read_bytes_per_second": 50e6, "write_bytes_per_second": 1e6,
                   "reads_per_second": 400, "writes_per_second": 10, "busy_percent": 10, "average_wait_ms": 0.2}],
        "networks": [{"name": "eth0", "rx_bytes_per_second": 1e5, "tx_bytes_per_second": 1e5, "speed_mbps": 25000}],
        "gpu_status": "ok", "gpu_driver_version": "550.127.05",
        "gpus": [gpu(0, 90, 75, [(100, 100, 85)])],
        "processes": [proc(1, 0, "systemd", 0, "root", 0, 86400), proc(50, 1, "bash", 0),
                      proc(100, 50, "python", 60, command="python train.py"),
                      *[proc(p, 100, "python", 50, command="python train.py") for p in range(101, 105)]],
    }


def find(snap, pid):
    return next(p for p in snap["processes"] if p["pid"] == pid)


SCENARIOS = []


def scenario(name, expect, description):
    def register(edit):
        SCENARIOS.append((name, sorted(expect), description, edit))
        return edit
    return register


@scenario("healthy-training", [], "A trainer with four workers keeps its GPU 90 % busy at 75 % memory.")
def _(s, i): pass


@scenario("healthy-idle-box", [], "Nothing runs: an idle GPU with no process, a quiet host.")
def _(s, i):
    s["gpus"] = [gpu(0, 0, 0.3)]
    s["cpu"]["utilization_percent"] = 1
    s["processes"] = s["processes"][:2]


@scenario("healthy-four-gpus", [], "Four trainers, one per GPU, each GPU busy with memory in the best range.")
def _(s, i):
    s["host"]["cpu_count"] = 32
    s["gpus"] = [gpu(g, 92, 70 + g, [(200 + g, 90 + g, 88)]) for g in range(4)]
    s["processes"] += [proc(200 + g, 50, "python", 95, command=f"python train.py --rank {g}") for g in range(4)]


@scenario("cpu-saturated", ["cpu_load_high"], "The host CPU stays at 95 % while the GPU keeps up.")
def _(s, i): s["cpu"]["utilization_percent"] = 95


@scenario("swap-active", ["swap_active"], "3 MB/s swapped out for the whole window.")
def _(s, i): s["swap"]["out_bytes_per_second"] = 3e6


@scenario("swap-thrash", ["swap_active", "swap_thrash"], "Pages swapped out and in at 2 MB/s each.")
def _(s, i):
    s["swap"]["in_bytes_per_second"] = 2e6
    s["swap"]["out_bytes_per_second"] = 2e6


@scenario("io-wait", ["io_wait_high"], "8 % I/O wait with the GPU still busy.")
def _(s, i): s["cpu"]["iowait_percent"] = 8


@scenario("input-bound", ["input_bound"], "GPU at 30 % while the trainer and its workers use their cores fully.")
def _(s, i):
    s["gpus"][0]["utilization_percent"] = 30
    for p in s["processes"][2:]:
        p["cpu_percent"] = 98


@scenario("input-bound-waiting-trainer", ["input_bound"],
          "GPU at 3 %: two workers near a full core each, the trainer waiting at 20 % (as seen on an H200).")
def _(s, i):
    s["gpus"][0]["utilization_percent"] = 3
    s["processes"] = [p for p in s["processes"] if p["pid"] not in (103, 104)]
    for p in s["processes"]:
        p["cpu_percent"] = {100: 20, 101: 96, 102: 95}.get(p["pid"], p["cpu_percent"])


@scenario("io-bound", ["io_bound", "io_wait_high"], "GPU at 20 %, 30 % I/O wait, the NVMe disk 98 % busy.")
def _(s, i):
    s["gpus"][0]["utilization_percent"] = 20
    s["cpu"]["iowait_percent"] = 30
    s["disks"][0]["busy_percent"] = 98


@scenario("near-oom", ["gpu_memory_high", "gpu_memory_near_oom"], "GPU memory at 97 %.")
def _(s, i): s["gpus"][0] = gpu(0, 90, 97, [(100, 135, 85)])


@scenario("memory-rising", ["gpu_memory_near_oom"], "GPU memory climbs from 86 % by 0.1 point a second.")
def _(s, i): s["gpus"][0] = gpu(0, 90, 86 + 0.2 * i, [(100, 120, 85)])


@scenario("underused", ["gpu_underused"], "GPU 95 % busy using 30 % of its memory.")
def _(s, i): s["gpus"][0] = gpu(0, 95, 30, [(100, 42, 90)])


@scenario("idle-held", ["gpu_idle_held"], "A three-hour-old notebook kernel holds 40 GiB of an idle GPU1.")
def _(s, i):
    s["gpus"].append(gpu(1, 0, 29, [(300, 40, 0)]))
    s["processes"].append(proc(300, 1, "python", 0, age_s=3 * 3600, command="python -m ipykernel_launcher"))


@scenario("contention", ["gpu_contention"], "Bob's job from another shell computes on Alice's GPU.")
def _(s, i):
    s["gpus"][0]["processes"].append({"pid": 400, "type": "compute", "used_memory_bytes": 5 * GIB,
                                      "sm_utilization_percent": 40})
    s["processes"] += [proc(60, 1, "bash", 0, "bob", 1001), proc(400, 60, "python", 90, "bob", 1001)]


@scenario("throttled-hot", ["gpu_throttled"], "The busy GPU runs hot with thermal slowdown.")
def _(s, i):
    s["gpus"][0]["throttle_reasons"] = ["hw_thermal_slowdown", "sw_thermal_slowdown"]
    s["gpus"][0]["temperature_celsius"] = 91


@scenario("pcie-x8", ["pcie_degraded"], "The GPU's link trained at x8 in an x16 slot.")
def _(s, i): s["gpus"][0]["pcie_width"] = 8


@scenario("gpu-memory-leak", ["gpu_memory_leak"], "The trainer's GPU memory grows by 128 MiB every 2 s.")
def _(s, i): s["gpus"][0]["processes"][0]["used_memory_bytes"] = 70 * GIB + i * (128 << 20)


@scenario("startup-plateau", [], "A trainer's GPU memory steps from 0.5 to 1.3 GiB at its first steps, then holds.")
def _(s, i):
    s["gpus"][0]["processes"][0]["used_memory_bytes"] = int((0.5 if i < 7 else 0.9 if i == 7 else 1.34) * GIB)


@scenario("ecc-errors", ["gpu_hardware_errors"], "Two uncorrectable ECC errors appear mid-window.")
def _(s, i): s["gpus"][0]["ecc_uncorrected_volatile"] = 2 if i >= 8 else 0


@scenario("memory-pressure", ["host_memory_pressure"], "Every task stalls on memory 12 % of the time.")
def _(s, i): s["pressure"]["memory"]["full"]["avg10"] = 12


@scenario("oversubscribed", ["cpu_oversubscribed"], "40 runnable tasks on 8 cores.")
def _(s, i): s["cpu"]["runnable_tasks"] = 40


@scenario("shm-docker-default", ["shm_low"], "A container with Docker's 64 MB /dev/shm runs DataLoader workers.")
def _(s, i):
    s["memory"]["shm_total_bytes"] = 64 << 20
    s["memory"]["shm_used_bytes"] = 1 << 20


@scenario("stale-gpu", [], "The driver hangs: the GPU readings are stale (and would look near OOM); stale data is not judged.")
def _(s, i):
    s["gpus"][0] = gpu(0, 90, 97, [(100, 135, 85)])
    s["gpus"][0]["stale"] = True


@scenario("gpu-lost", ["gpu_lost"],
          "A second, idle GPU falls off the bus half way: NVML answers GPU_IS_LOST for it (Xid 79).")
def _(s, i):
    g = gpu(1, 0, 0)
    if i >= TICKS // 2:
        g = {k: g[k] for k in ("index", "uuid", "name", "pci_bus_id")}
        g.update({"stale": False, "error": "GPU is lost", "lost": True, "processes": []})
    s["gpus"].append(g)


@scenario("notebook-holds-idle-gpu", ["gpu_idle_held"],
          "A two-hour-old notebook kernel holds 12 GiB on a GPU at 0 % while it runs pandas on one core: not input-bound.")
def _(s, i):
    s["gpus"][0] = gpu(0, 0, 9, [(300, 12, 0)])
    s["processes"] = [p for p in s["processes"] if p["pid"] < 100]
    s["processes"].append(proc(300, 50, "python", 100, age_s=7200, command="python -m ipykernel_launcher"))
    s["cpu"]["utilization_percent"] = 12.5


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    for name, expect, description, edit in SCENARIOS:
        with open(os.path.join(out, name + ".jsonl"), "w") as f:
            for i in range(TICKS):
                s = healthy(i)
                edit(s, i)
                f.write(json.dumps(s, separators=(",", ":")) + "\n")
        with open(os.path.join(out, name + ".expect"), "w") as f:
            f.write("".join(e + "\n" for e in expect))
    # The table for README.md (printed; paste it under "Generated" when scenarios change).
    if os.environ.get("PRINT_TABLE"):
        print("| scenario | expected rule ids | what happens |\n|---|---|---|")
        for name, expect, description, _ in SCENARIOS:
            print(f"| `{name}` | {', '.join(expect) or '(none)'} | {description} |")


if __name__ == "__main__":
    main()
