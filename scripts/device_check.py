#!/usr/bin/env python3
"""The comparison half of scripts/device-check.sh: baton's GPU readings against nvidia-smi
(and nvidia-ml-py when importable), and the recorder that turns the real GPUs into a
fake-NVML scenario. Standard library only (ctypes for NVML), so it runs on a bare machine.

  device_check.py compare BATON_JSONL SMI_GPU_CSV SMI_APPS_CSV   -> prints a table, exit 1 on mismatch
  device_check.py record LIBNVML OUT.json TICKS INTERVAL          -> writes a scenario file
"""
import ctypes
import json
import sys
import time

# Tolerances: memory is exact (both read the same counter, apart from a changing value
# between the two reads, which the load avoids by holding its buffers); utilisation moves
# with the sampling window; power is averaged differently by the two.
UTIL_POINTS = 10
POWER_FRACTION = 0.10
TEMP_DEGREES = 3
MIB = 1024 * 1024


def load_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def parse_csv(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append([c.strip() for c in line.split(",")])
    return rows


def num(text):
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def compare(baton_path, gpu_csv, apps_csv):
    snaps = load_jsonl(baton_path)
    snap = snaps[-1]
    gpus = {g["uuid"]: g for g in snap["gpus"]}
    failures = 0
    checks = 0
    print(f"baton gpu_status: {snap['gpu_status']}")
    print(f"{'field':34} {'nvidia-smi':>18} {'baton':>18}  verdict")
    # index,uuid,name,pci.bus_id,memory.total,memory.used,utilization.gpu,power.draw,temperature.gpu
    for row in parse_csv(gpu_csv):
        index, uuid, name, bus, mtotal, mused, util, power, temp = row[:9]
        g = gpus.get(uuid)
        label = f"GPU{index} {name}"
        if g is None:
            print(f"{label:34} {'present':>18} {'missing':>18}  MISMATCH")
            failures += 1
            continue

        def check(field, smi_value, baton_value, ok):
            nonlocal failures, checks
            checks += 1
            verdict = "ok" if ok else "MISMATCH"
            if not ok:
                failures += 1
            print(f"{label + ' ' + field:34} {str(smi_value):>18} {str(baton_value):>18}  {verdict}")

        check("index", index, g["index"], int(index) == g["index"])
        check("pci_bus_id", bus, g["pci_bus_id"], bus.lower().lstrip("0") == g["pci_bus_id"].lower().lstrip("0"))
        if num(mtotal) is not None and "memory_total_bytes" in g:
            check("memory.total MiB", mtotal, g["memory_total_bytes"] // MIB, int(num(mtotal)) == g["memory_total_bytes"] // MIB)
        if num(mused) is not None and "memory_used_bytes" in g:
            check("memory.used MiB", mused, g["memory_used_bytes"] // MIB, abs(num(mused) - g["memory_used_bytes"] // MIB) <= 2)
        if num(util) is not None and "utilization_percent" in g:
            check("utilization.gpu %", util, g["utilization_percent"], abs(num(util) - g["utilization_percent"]) <= UTIL_POINTS)
        if num(power) is not None and "power_watts" in g:
            p = num(power)
            check("power.draw W", power, round(g["power_watts"], 1), abs(p - g["power_watts"]) <= max(5.0, POWER_FRACTION * p))
        if num(temp) is not None and "temperature_celsius" in g:
            check("temperature C", temp, g["temperature_celsius"], abs(num(temp) - g["temperature_celsius"]) <= TEMP_DEGREES)
    # gpu_uuid,pid,used_memory
    smi_procs = {(r[0], int(r[1])) for r in parse_csv(apps_csv) if len(r) >= 3 and r[1].isdigit()}
    baton_procs = {(g["uuid"], p["pid"]) for g in snap["gpus"] for p in g["processes"] if p["type"] == "compute"}
    checks += 1
    same = smi_procs == baton_procs
    if not same:
        failures += 1
    print(f"{'compute processes':34} {len(smi_procs):>18} {len(baton_procs):>18}  {'ok' if same else 'MISMATCH'}")
    for missing in sorted(smi_procs - baton_procs):
        print(f"  only in nvidia-smi: {missing}")
    for extra in sorted(baton_procs - smi_procs):
        print(f"  only in baton: {extra}")
    print(f"{checks - failures} of {checks} checks agree")
    return 0 if failures == 0 else 1


class Nvml:
    """The few NVML calls the recorder needs, through ctypes."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        init = getattr(self.lib, "nvmlInit_v2", None) or self.lib.nvmlInit
        self._ok(init())

    def _ok(self, rc):
        if rc != 0:
            raise RuntimeError(f"NVML error {rc}")

    def call(self, name, *args):
        fn = getattr(self.lib, name, None)
        if fn is None:
            return None
        return fn(*args)

    def count(self):
        n = ctypes.c_uint()
        self._ok(self.lib.nvmlDeviceGetCount_v2(ctypes.byref(n)))
        return n.value

    def handle(self, i):
        h = ctypes.c_void_p()
        self._ok(self.lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)))
        return h

    def text(self, name, h):
        buf = ctypes.create_string_buffer(128)
        return buf.value.decode() if self.call(name, h, buf, 128) == 0 else None

    def uint(self, name, h, *extra):
        v = ctypes.c_uint()
        return v.value if self.call(name, h, *extra, ctypes.byref(v)) == 0 else None

    def ull(self, name, h, *extra):
        v = ctypes.c_ulonglong()
        return v.value if self.call(name, h, *extra, ctypes.byref(v)) == 0 else None


def record(lib_path, out_path, ticks, interval):
    nv = Nvml(lib_path)
    devices = []
    for i in range(nv.count()):
        h = nv.handle(i)
        pci = (ctypes.c_char * 64)()
        busid = None
        if nv.call("nvmlDeviceGetPciInfo_v3", h, pci) == 0:
            busid = bytes(pci)[36:68].split(b"\0")[0].decode()  # nvmlPciInfo_t.busId
        values = {
            "uuid": nv.text("nvmlDeviceGetUUID", h), "name": nv.text("nvmlDeviceGetName", h), "pci_bus_id": busid,
            "power_limit_mw": nv.uint("nvmlDeviceGetEnforcedPowerLimit", h),
            "sm_clock_max": nv.uint("nvmlDeviceGetMaxClockInfo", h, 1), "mem_clock_max": nv.uint("nvmlDeviceGetMaxClockInfo", h, 2),
            "pcie_gen_max": nv.uint("nvmlDeviceGetMaxPcieLinkGeneration", h), "pcie_width_max": nv.uint("nvmlDeviceGetMaxPcieLinkWidth", h),
            "persistence_mode": nv.uint("nvmlDeviceGetPersistenceMode", h), "compute_mode": nv.uint("nvmlDeviceGetComputeMode", h),
            "ecc_uncorrected_volatile": nv.ull("nvmlDeviceGetTotalEccErrors", h, 1, 0),
        }
        mig = (ctypes.c_uint(), ctypes.c_uint())
        if nv.call("nvmlDeviceGetMigMode", h, ctypes.byref(mig[0]), ctypes.byref(mig[1])) == 0:
            values["mig_mode"] = mig[0].value
        devices.append({"handle": h, "values": {k: v for k, v in values.items() if v is not None}, "ticks": []})
    for t in range(ticks):
        for d in devices:
            h = d["handle"]
            util = (ctypes.c_uint * 2)()
            tick = {}
            if nv.call("nvmlDeviceGetUtilizationRates", h, util) == 0:
                tick["utilization_gpu"], tick["utilization_memory"] = util[0], util[1]
            mem = (ctypes.c_ulonglong * 5)()
            mem[0] = 40 | (2 << 24)  # nvmlMemory_v2: version in the first 4 bytes
            if nv.call("nvmlDeviceGetMemoryInfo_v2", h, mem) == 0:
                tick["memory_total"], tick["memory_reserved"], tick["memory_used"] = mem[1], mem[2], mem[4]
            for key, name, extra in (("temperature", "nvmlDeviceGetTemperature", (0,)), ("power_mw", "nvmlDeviceGetPowerUsage", ()),
                                     ("sm_clock", "nvmlDeviceGetClockInfo", (1,)), ("mem_clock", "nvmlDeviceGetClockInfo", (2,)),
                                     ("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", ()), ("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", ()),
                                     ("pcie_rx_kbps", "nvmlDeviceGetPcieThroughput", (1,)), ("pcie_tx_kbps", "nvmlDeviceGetPcieThroughput", (0,))):
                v = nv.uint(name, h, *extra)
                if v is not None:
                    tick[key] = v
            reasons = nv.ull("nvmlDeviceGetCurrentClocksEventReasons", h)
            if reasons is None:
                reasons = nv.ull("nvmlDeviceGetCurrentClocksThrottleReasons", h)
            if reasons is not None:
                tick["clock_event_reasons"] = reasons
            d["ticks"].append(tick)
        time.sleep(interval)
    scenario = {
        "description": f"Recorded by scripts/device-check.sh on {time.strftime('%Y-%m-%d')} from {lib_path}: {len(devices)} GPU(s), {ticks} ticks.",
        "devices": [{"values": d["values"], "ticks": d["ticks"]} for d in devices],
    }
    with open(out_path, "w") as f:
        json.dump(scenario, f, indent=1)
        f.write("\n")
    print(f"recorded {len(devices)} GPU(s), {ticks} ticks -> {out_path}")
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "compare":
        return compare(argv[2], argv[3], argv[4])
    if len(argv) == 6 and argv[1] == "record":
        return record(argv[2], argv[3], int(argv[4]), float(argv[5]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
