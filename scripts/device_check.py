#!/usr/bin/env python3
"""The comparison half of scripts/device-check.sh: baton's GPU readings against nvidia-smi
(and nvidia-ml-py when importable), and the recorder that turns the real GPUs into a
fake-NVML scenario. Standard library only (ctypes for NVML), so it runs on a bare machine.

  device_check.py compare BATON_JSONL SMI_GPU_CSV SMI_APPS_CSV   -> prints a table, exit 1 on mismatch
  device_check.py panel-fields                                    -> the nvidia-smi fields `panel` needs
  device_check.py panel BATON_JSONL SMI_PANEL_CSV SMI_NVLINK_TXT  -> the GPU panel's fields, the same way
  device_check.py record LIBNVML OUT.json TICKS INTERVAL          -> writes a scenario file
"""
import ctypes
import json
import re
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


# The GPU panel of `baton top` (issue 17) against nvidia-smi: (nvidia-smi field, baton key, how to
# compare). A field one side reports and the other does not is a mismatch: baton leaves out what
# the driver does not support and must not leave out what it does. Clocks move with the load
# between the two reads; the maxima, error counts and modes must be equal.
PANEL_FIELDS = [
    ("fan.speed", "fan_speed_percent", ("near", 5)),
    ("clocks.sm", "sm_clock_mhz", ("near_fraction", 0.15, 150)),
    ("clocks.max.sm", "sm_clock_max_mhz", ("equal",)),
    ("clocks.mem", "memory_clock_mhz", ("near_fraction", 0.05, 50)),
    ("clocks.max.mem", "memory_clock_max_mhz", ("equal",)),
    ("utilization.encoder", "encoder_utilization_percent", ("near", UTIL_POINTS)),
    ("utilization.decoder", "decoder_utilization_percent", ("near", UTIL_POINTS)),
    ("pcie.link.gen.current", "pcie_generation", ("equal",)),
    ("pcie.link.gen.max", "pcie_generation_max", ("equal",)),
    ("pcie.link.width.current", "pcie_width", ("equal",)),
    ("pcie.link.width.max", "pcie_width_max", ("equal",)),
    ("ecc.errors.corrected.volatile.total", "ecc_corrected_volatile", ("equal",)),
    ("ecc.errors.uncorrected.volatile.total", "ecc_uncorrected_volatile", ("equal",)),
    ("retired_pages.single_bit_ecc.count", None, ("retired",)),  # with the next: baton's sum
    ("retired_pages.double_bit.count", "retired_pages", ("retired",)),
    ("remapped_rows.correctable", "remapped_rows_corrected", ("equal",)),
    ("remapped_rows.uncorrectable", "remapped_rows_uncorrected", ("equal",)),
    ("remapped_rows.pending", "remapping_pending", ("yes_no",)),
    ("remapped_rows.failure", "remapping_failed", ("yes_no",)),
    ("persistence_mode", "persistence_mode", ("enabled",)),
    ("compute_mode", "compute_mode", ("compute_mode",)),
    ("mig.mode.current", "mig_mode", ("enabled",)),
    ("temperature.memory", "memory_temperature_celsius", ("near", TEMP_DEGREES)),
]
COMPUTE_MODES = {"default": "default", "exclusive_process": "exclusive_process", "prohibited": "prohibited",
                 "exclusive_thread": "exclusive_thread"}


def smi_absent(text):
    return text is None or text.startswith("[") or text in ("N/A", "")


def smi_bool(text, yes):
    t = text.strip().lower()
    return True if t == yes else False if t in ("no", "disabled") else None


def nvlink_links(path):
    """Active links per GPU UUID from `nvidia-smi nvlink -s` ("GPU 0: NAME (UUID: GPU-...)", then one
    "Link N: 26.562 GB/s" line per active link, "Link N: <inactive>" for the others)."""
    links, uuid = {}, None
    try:
        text = open(path).read()
    except OSError:
        return links
    for line in text.splitlines():
        m = re.match(r"GPU \d+: .*\(UUID: (\S+)\)", line.strip())
        if m:
            uuid = m.group(1)
            links[uuid] = 0
        elif uuid and re.match(r"Link \d+: [0-9.]+ [GM]B/s", line.strip()):
            links[uuid] += 1
    return links


def panel(baton_path, panel_csv, nvlink_txt):
    snap = load_jsonl(baton_path)[-1]
    gpus = {g["uuid"]: g for g in snap["gpus"]}
    links = nvlink_links(nvlink_txt)
    failures = checks = 0
    print(f"{'field':48} {'nvidia-smi':>14} {'baton':>14}  verdict")
    for row in parse_csv(panel_csv):
        uuid, values = row[0], row[1:]
        g = gpus.get(uuid)
        if g is None or len(values) != len(PANEL_FIELDS):
            print(f"{uuid:48} {'present':>14} {'missing' if g is None else 'bad row':>14}  MISMATCH")
            failures += 1
            continue
        label = f"GPU{g['index']}"

        def verdict(field, smi_text, baton_value, ok):
            nonlocal failures, checks
            checks += 1
            failures += not ok
            shown = "-" if baton_value is None else str(baton_value)
            print(f"{label + ' ' + field:48} {smi_text:>14} {shown:>14}  {'ok' if ok else 'MISMATCH'}")

        retired = []
        for (field, key, how), text in zip(PANEL_FIELDS, values):
            if how[0] == "retired":
                retired.append(None if smi_absent(text) else num(text))
                if key is None:
                    continue
                smi_sum = None if None in retired else sum(retired)
                b = g.get(key)
                verdict("retired_pages (both causes)", "[N/A]" if smi_sum is None else str(int(smi_sum)), b,
                        (smi_sum is None) == (b is None) and (b is None or int(smi_sum) == b))
                continue
            b = g.get(key)
            if smi_absent(text) or b is None:
                verdict(field, text, b, smi_absent(text) and b is None)
                continue
            if how[0] == "near":
                ok = num(text) is not None and abs(num(text) - b) <= how[1]
            elif how[0] == "near_fraction":
                ok = num(text) is not None and abs(num(text) - b) <= max(how[2], how[1] * num(text))
            elif how[0] == "equal":
                ok = num(text) is not None and int(num(text)) == int(b)
            elif how[0] == "yes_no":
                ok = smi_bool(text, "yes") == b
            elif how[0] == "enabled":
                ok = smi_bool(text, "enabled") == b
            else:  # compute_mode: "Default", "Exclusive_Process", ...
                ok = COMPUTE_MODES.get(text.strip().lower()) == b
            verdict(field, text, b, ok)
        # NVLink: links up (nvidia-smi nvlink -s) against nvlink_links_active (absent: no NVLink).
        smi_up = links.get(uuid, 0)
        verdict("nvlink links active", str(smi_up), g.get("nvlink_links_active"),
                smi_up == g.get("nvlink_links_active", 0))
    print(f"{checks - failures} of {checks} panel checks agree")
    return 0 if failures == 0 and checks > 0 else 1


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

    def field_uint(self, h, field_id):
        """One nvmlDeviceGetFieldValues entry read as an unsigned int (the memory temperature, field 82),
        None where the call or the entry fails. nvmlFieldValue_t: fieldId, scopeId (u32), timestamp,
        latencyUsec (i64), valueType, nvmlReturn (u32), value (8 bytes): 40 bytes."""
        buf = (ctypes.c_ubyte * 40)()
        ctypes.c_uint.from_buffer(buf, 0).value = field_id
        if self.call("nvmlDeviceGetFieldValues", h, 1, buf) != 0 or ctypes.c_uint.from_buffer(buf, 28).value != 0:
            return None
        return ctypes.c_uint.from_buffer(buf, 32).value


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
        # The GPU panel's slow fields (read every gpu.pcie_interval_seconds): constant over a recording.
        values["ecc_corrected_volatile"] = nv.ull("nvmlDeviceGetTotalEccErrors", h, 0, 0)
        rows = [ctypes.c_uint() for _ in range(4)]
        if nv.call("nvmlDeviceGetRemappedRows", h, *[ctypes.byref(r) for r in rows]) == 0:
            for key, r in zip(("remapped_rows_corrected", "remapped_rows_uncorrected", "remapping_pending",
                               "remapping_failed"), rows):
                values[key] = r.value
        for key, cause in (("retired_pages_sbe", 0), ("retired_pages_dbe", 1)):
            n = ctypes.c_uint(0)
            if nv.call("nvmlDeviceGetRetiredPages", h, cause, ctypes.byref(n), None) in (0, 7):  # 7: INSUFFICIENT_SIZE
                values[key] = n.value
        remotes = []
        for link in range(18):  # NVML_NVLINK_MAX_LINKS
            active = nv.uint("nvmlDeviceGetNvLinkState", h, link)
            if active is None:
                break
            if active:
                pci = (ctypes.c_char * 64)()
                ok = nv.call("nvmlDeviceGetNvLinkRemotePciInfo_v2", h, link, pci) == 0
                remotes.append(bytes(pci)[36:68].split(b"\0")[0].decode() if ok else "")
        if remotes:
            values["nvlink_remotes"] = remotes
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
                                     ("pcie_rx_kbps", "nvmlDeviceGetPcieThroughput", (1,)), ("pcie_tx_kbps", "nvmlDeviceGetPcieThroughput", (0,)),
                                     ("fan_speed", "nvmlDeviceGetFanSpeed", ())):
                v = nv.uint(name, h, *extra)
                if v is not None:
                    tick[key] = v
            memory_temperature = nv.field_uint(h, 82)  # NVML_FI_DEV_MEMORY_TEMP
            if memory_temperature is not None:
                tick["memory_temperature"] = memory_temperature
            for key, name in (("encoder_util", "nvmlDeviceGetEncoderUtilization"),
                              ("decoder_util", "nvmlDeviceGetDecoderUtilization")):
                util_period = (ctypes.c_uint(), ctypes.c_uint())
                if nv.call(name, h, ctypes.byref(util_period[0]), ctypes.byref(util_period[1])) == 0:
                    tick[key] = util_period[0].value
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
    if len(argv) == 2 and argv[1] == "panel-fields":
        print(",".join(field for field, _, _ in PANEL_FIELDS))
        return 0
    if len(argv) == 5 and argv[1] == "panel":
        return panel(argv[2], argv[3], argv[4])
    if len(argv) == 6 and argv[1] == "record":
        return record(argv[2], argv[3], int(argv[4]), float(argv[5]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
