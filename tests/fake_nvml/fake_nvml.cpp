// A fake libnvidia-ml.so.1 for tests: exports the NVML entry points baton uses, answering
// from the scenario file named by $BATON_FAKE_NVML_SCENARIO. The format is documented in
// tests/fake_nvml/README.md. Symbols a scenario lists as missing are hidden at link time
// (tests/fake_nvml/CMakeLists.txt builds one library per scenario).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "sample/gpu/nvml_api.hpp"

using nlohmann::json;

namespace {

struct Device {
    int id = 0;           // position in the scenario = NVML index
    long util_calls = 0;  // this device's tick clock: see current_tick()
    // resolved[t]: the device's values at tick t (base values, then every tick entry up to
    // t applied in order), computed once at load so a call is one map lookup.
    std::vector<json> resolved;
};

struct Scenario {
    bool loaded = false;
    std::string load_error;
    json root;
    std::vector<Device> devices;
    int record_bytes = 24;        // what the _v3 process call writes: 24, or 32 (R535)
    bool has_injections = false;  // any "errors" or "hang": otherwise injected() is free
};

std::mutex g_mutex;
Scenario g;

const std::map<std::string, nvmlReturn_t>& error_names() {
    static const std::map<std::string, nvmlReturn_t> m = {{"UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
                                                          {"INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT},
                                                          {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
                                                          {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
                                                          {"NOT_FOUND", NVML_ERROR_NOT_FOUND},
                                                          {"DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
                                                          {"TIMEOUT", NVML_ERROR_TIMEOUT},
                                                          {"GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
                                                          {"UNKNOWN", NVML_ERROR_UNKNOWN}};
    return m;
}

// BATON_FAKE_NVML_HANG_ON_LOAD: the library's constructor never returns, as a driver stuck while
// loading: dlopen never returns, and holds the dynamic loader's lock.
__attribute__((constructor)) void hang_on_load() {
    if (std::getenv("BATON_FAKE_NVML_HANG_ON_LOAD"))
        for (;;) sleep(1000);
}

nvmlReturn_t load() {
    if (g.loaded) return g.load_error.empty() ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
    g.loaded = true;
    const char* path = std::getenv("BATON_FAKE_NVML_SCENARIO");
    if (!path) {
        g.load_error = "BATON_FAKE_NVML_SCENARIO is not set";
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    std::ifstream in(path);
    try {
        g.root = json::parse(in);
    } catch (const std::exception& e) {
        g.load_error = e.what();
        return NVML_ERROR_UNKNOWN;
    }
    g.record_bytes = g.root.value("process_record_bytes", 24);
    g.has_injections = g.root.contains("errors") || g.root.contains("hang");
    int id = 0;
    for (const json& d : g.root.value("devices", json::array())) {
        Device dev;
        dev.id = id++;
        json current = d.value("values", json::object());
        const json ticks = d.value("ticks", json::array());
        if (ticks.empty()) dev.resolved.push_back(current);
        for (const json& t : ticks) {
            current.update(t);
            dev.resolved.push_back(current);
        }
        g.devices.push_back(std::move(dev));
    }
    return NVML_SUCCESS;
}

// Each device has its own tick clock: every read of its utilisation starts its next tick
// (baton reads utilisation first for every GPU on every tick). Calls before the first
// utilisation read, and calls bound to no device, are at the device's (or the latest) tick.
long current_tick(int dev) {
    if (dev >= 0) {
        long n = g.devices[static_cast<std::size_t>(dev)].util_calls;
        return n > 0 ? n - 1 : 0;
    }
    long t = 0;
    for (const Device& d : g.devices) t = std::max(t, d.util_calls > 0 ? d.util_calls - 1 : 0);
    return t;
}

Device* device(nvmlDevice_t h) {
    auto i = reinterpret_cast<std::uintptr_t>(h);
    if (i == 0 || i > g.devices.size()) return nullptr;
    return &g.devices[i - 1];
}

// The value of `key` for `dev` at the current tick: the latest tick at or before now that
// sets it, else the device's base values. Null when the scenario never sets it.
const json& value(const Device& dev, const char* key) {
    static const json null_value;
    auto t = static_cast<std::size_t>(current_tick(dev.id));
    const json& at = dev.resolved[std::min(t, dev.resolved.size() - 1)];
    auto it = at.find(key);
    return it == at.end() ? null_value : *it;
}

// MIG device handles: (GPU's scenario index + 1) | (slot + 1) << 16, slot being the position in the
// GPU's "mig_instances". The instance's own keys answer the calls on it (uuid, name, memory_total,
// memory_used, processes, gpu_instance_id, compute_instance_id).
constexpr std::uintptr_t kMigShift = 16;

nvmlDevice_t mig_handle(int dev, std::size_t slot) {
    return reinterpret_cast<nvmlDevice_t>(static_cast<std::uintptr_t>(dev + 1) | ((slot + 1) << kMigShift));
}

// The value of `key` for a GPU or MIG handle in `out` (a null value when unset), and the GPU it
// belongs to in `owner`; false for a handle that names nothing.
bool lookup(nvmlDevice_t h, const char* key, Device*& owner, const json*& out) {
    static const json null_value;
    const auto raw = reinterpret_cast<std::uintptr_t>(h);
    const std::uintptr_t slot = raw >> kMigShift;
    owner = device(reinterpret_cast<nvmlDevice_t>(raw & ((1u << kMigShift) - 1)));
    if (!owner) return false;
    if (slot == 0) {
        out = &value(*owner, key);
        return true;
    }
    const json& instances = value(*owner, "mig_instances");
    if (!instances.is_array() || slot > instances.size()) return false;
    const json& m = instances[slot - 1];
    auto it = m.find(key);
    out = it == m.end() ? &null_value : &*it;
    return true;
}

// A counter that grows each tick by that tick's `key` (what the scenario sets for it, 0 if
// nothing): its value now. Past the last tick entry the last values hold, so the sum is closed.
unsigned long long counter_now(const Device& d, const char* key) {
    const auto now = static_cast<std::size_t>(current_tick(d.id));
    const std::size_t last = d.resolved.size() - 1;
    unsigned long long sum = 0;
    for (std::size_t t = 0; t <= std::min(now, last); ++t) sum += d.resolved[t].value(key, 0ULL);
    if (now > last) sum += (now - last) * d.resolved[last].value(key, 0ULL);
    return sum;
}

// Scenario-injected failures and hangs for a call on a device (-1: not device-bound).
nvmlReturn_t injected(const char* call, int dev) {
    if (!g.has_injections) return NVML_SUCCESS;
    long t = current_tick(dev);
    for (const json& e : g.root.value("errors", json::array())) {
        std::string c = e.value("call", "*");
        if (c != "*" && c != call) continue;
        if (e.contains("device") && e["device"].get<int>() != dev) continue;
        if (t < e.value("from_tick", 0L) || t > e.value("to_tick", 1L << 40)) continue;
        auto it = error_names().find(e.value("error", "UNKNOWN"));
        return it == error_names().end() ? NVML_ERROR_UNKNOWN : it->second;
    }
    if (g.root.contains("hang")) {
        const json& h = g.root["hang"];
        bool dev_ok = !h.contains("device") || h["device"].get<int>() == dev;
        if (h.value("call", "") == call && dev_ok && t >= h.value("from_tick", 0L)) {
            double secs = h.value("seconds", 3600.0);
            // Sleep without the lock: a real hung driver call blocks only its caller.
            g_mutex.unlock();
            std::this_thread::sleep_for(std::chrono::duration<double>(secs));
            g_mutex.lock();
        }
    }
    return NVML_SUCCESS;
}

template <typename T>
nvmlReturn_t number(nvmlDevice_t h, const char* call, const char* key, T* out) {
    std::lock_guard lock(g_mutex);
    Device* d = nullptr;
    const json* v = nullptr;
    if (!lookup(h, key, d, v) || !out) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = injected(call, d->id)) return rc;
    if (v->is_null()) return NVML_ERROR_NOT_SUPPORTED;
    *out = v->get<T>();
    return NVML_SUCCESS;
}

nvmlReturn_t string_value(nvmlDevice_t h, const char* call, const char* key, char* buf, unsigned len) {
    std::lock_guard lock(g_mutex);
    Device* d = nullptr;
    const json* v = nullptr;
    if (!lookup(h, key, d, v) || !buf) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = injected(call, d->id)) return rc;
    if (v->is_null()) return NVML_ERROR_NOT_SUPPORTED;
    const auto& s = v->get_ref<const std::string&>();
    if (s.size() + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    std::memcpy(buf, s.c_str(), s.size() + 1);
    return NVML_SUCCESS;
}

// Compute processes a test adds while baton runs: the file named by BATON_FAKE_NVML_PROCESSES,
// read at every call, one "GPU PID USED_MEMORY_BYTES" line per process, GPU being the index in
// PCI bus order (what baton and nvidia-smi show). A test's job writes its own pid there, the way
// a real CUDA context makes a process appear in NVML's list.
std::vector<json> added_processes(const Device& dev) {
    std::vector<json> out;
    const char* path = std::getenv("BATON_FAKE_NVML_PROCESSES");
    if (!path) return out;
    std::vector<std::pair<std::string, int>> order;  // (pci_bus_id, id): the PCI bus order
    for (const Device& d : g.devices)
        order.emplace_back(
            value(d, "pci_bus_id").is_string() ? value(d, "pci_bus_id").get<std::string>() : std::string(), d.id);
    std::sort(order.begin(), order.end());
    std::ifstream in(path);
    long index = 0, pid = 0;
    unsigned long long used = 0;
    while (in >> index >> pid >> used)
        if (index >= 0 && static_cast<std::size_t>(index) < order.size() &&
            order[static_cast<std::size_t>(index)].second == dev.id)
            out.push_back({{"pid", pid}, {"used_memory", used}, {"type", "compute"}});
    return out;
}

nvmlReturn_t processes(nvmlDevice_t h, const char* call, const char* type, unsigned* count, void* infos,
                       int record_bytes) {
    std::lock_guard lock(g_mutex);
    Device* d = nullptr;
    const json* found = nullptr;
    if (!lookup(h, "processes", d, found) || !count) return NVML_ERROR_INVALID_ARGUMENT;
    const json& list = *found;
    if (nvmlReturn_t rc = injected(call, d->id)) return rc;
    const bool on_mig = reinterpret_cast<std::uintptr_t>(h) >> kMigShift;
    std::vector<json> mine;
    if (list.is_array())
        for (const json& p : list)
            if (p.value("type", "compute") == type) mine.push_back(p);
    if (std::string(type) == "compute" && !on_mig)
        for (json& p : added_processes(*d)) mine.push_back(std::move(p));
    unsigned capacity = *count;
    *count = static_cast<unsigned>(mine.size());
    if (mine.size() > capacity || (!infos && !mine.empty())) return NVML_ERROR_INSUFFICIENT_SIZE;
    auto* bytes = static_cast<unsigned char*>(infos);
    for (std::size_t i = 0; i < mine.size(); ++i) {
        unsigned char* r = bytes + i * static_cast<std::size_t>(record_bytes);
        std::memset(r, 0, static_cast<std::size_t>(record_bytes));
        unsigned pid = mine[i].value("pid", 0u);
        unsigned long long mem = mine[i].contains("used_memory") ? mine[i]["used_memory"].get<unsigned long long>()
                                                                 : NVML_VALUE_NOT_AVAILABLE;
        std::memcpy(r, &pid, 4);
        std::memcpy(r + 8, &mem, 8);
        if (record_bytes >= 24) {  // the instance ids: 0xFFFFFFFF outside MIG
            const unsigned gi = mine[i].value("gpu_instance_id", 0xFFFFFFFFu);
            const unsigned ci = mine[i].value("compute_instance_id", 0xFFFFFFFFu);
            std::memcpy(r + 16, &gi, 4);
            std::memcpy(r + 20, &ci, 4);
        }
        if (record_bytes >= 32) {
            unsigned long long protected_mem = 0;
            std::memcpy(r + 24, &protected_mem, 8);
        }
    }
    return NVML_SUCCESS;
}

struct GpmSample {
    int device = -1;
    long tick = -1;
};

}  // namespace

extern "C" {

#define FAKE_API __attribute__((visibility("default")))

FAKE_API nvmlReturn_t nvmlInit_v2() {
    std::lock_guard lock(g_mutex);
    nvmlReturn_t rc = load();
    if (rc != NVML_SUCCESS) return rc;
    if (g.root.contains("init_error")) {
        auto it = error_names().find(g.root["init_error"].get<std::string>());
        return it == error_names().end() ? NVML_ERROR_UNKNOWN : it->second;
    }
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlInit() {
    return nvmlInit_v2();
}
FAKE_API nvmlReturn_t nvmlShutdown() {
    return NVML_SUCCESS;
}

FAKE_API const char* nvmlErrorString(nvmlReturn_t rc) {
    switch (rc) {
        case NVML_SUCCESS:
            return "Success";
        case NVML_ERROR_NOT_SUPPORTED:
            return "Not Supported";
        case NVML_ERROR_NO_PERMISSION:
            return "Insufficient Permissions";
        case NVML_ERROR_DRIVER_NOT_LOADED:
            return "Driver Not Loaded";
        case NVML_ERROR_GPU_IS_LOST:
            return "GPU is lost";
        case NVML_ERROR_TIMEOUT:
            return "Timeout";
        default:
            return "Unknown Error";
    }
}

FAKE_API nvmlReturn_t nvmlSystemGetDriverVersion(char* buf, unsigned len) {
    std::lock_guard lock(g_mutex);
    std::string v = g.root.value("driver_version", "550.00.00");
    if (v.size() + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    std::memcpy(buf, v.c_str(), v.size() + 1);
    return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlSystemGetNVMLVersion(char* buf, unsigned len) {
    std::lock_guard lock(g_mutex);
    std::string v = g.root.value("nvml_version", "12.550.00.00");
    if (v.size() + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    std::memcpy(buf, v.c_str(), v.size() + 1);
    return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
    std::lock_guard lock(g_mutex);
    *version = g.root.value("cuda_driver_version", 12040);
    return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
    std::lock_guard lock(g_mutex);
    if (nvmlReturn_t rc = injected("nvmlDeviceGetCount_v2", -1)) return rc;
    *count = static_cast<unsigned>(g.devices.size());
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetCount(unsigned* count) {
    return nvmlDeviceGetCount_v2(count);
}

FAKE_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* h) {
    std::lock_guard lock(g_mutex);
    if (i >= g.devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = injected("nvmlDeviceGetHandleByIndex_v2", static_cast<int>(i))) return rc;
    *h = reinterpret_cast<nvmlDevice_t>(static_cast<std::uintptr_t>(i + 1));
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t* h) {
    return nvmlDeviceGetHandleByIndex_v2(i, h);
}

FAKE_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char* buf, unsigned len) {
    return string_value(h, "nvmlDeviceGetUUID", "uuid", buf, len);
}
FAKE_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char* buf, unsigned len) {
    return string_value(h, "nvmlDeviceGetName", "name", buf, len);
}
FAKE_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t* pci) {
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    std::memset(pci, 0, sizeof *pci);
    return string_value(h, "nvmlDeviceGetPciInfo_v3", "pci_bus_id", pci->busId, sizeof pci->busId);
}

FAKE_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t* u) {
    {
        std::lock_guard lock(g_mutex);
        if (Device* d = device(h)) ++d->util_calls;
    }
    unsigned gpu = 0, mem = 0;
    if (nvmlReturn_t rc = number(h, "nvmlDeviceGetUtilizationRates", "utilization_gpu", &gpu)) return rc;
    if (nvmlReturn_t rc = number(h, "nvmlDeviceGetUtilizationRates", "utilization_memory", &mem)) return rc;
    u->gpu = gpu;
    u->memory = mem;
    return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t* m) {
    if (!m || m->version != nvmlMemory_v2) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long total = 0, used = 0, reserved = 0;
    if (nvmlReturn_t rc = number(h, "nvmlDeviceGetMemoryInfo_v2", "memory_total", &total)) return rc;
    if (nvmlReturn_t rc = number(h, "nvmlDeviceGetMemoryInfo_v2", "memory_used", &used)) return rc;
    number(h, "nvmlDeviceGetMemoryInfo_v2", "memory_reserved", &reserved);
    m->total = total;
    m->used = used;
    m->reserved = reserved;
    m->free = total - used - reserved;
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t* m) {
    unsigned long long total = 0, used = 0, reserved = 0;
    if (nvmlReturn_t rc = number(h, "nvmlDeviceGetMemoryInfo", "memory_total", &total)) return rc;
    if (nvmlReturn_t rc = number(h, "nvmlDeviceGetMemoryInfo", "memory_used", &used)) return rc;
    number(h, "nvmlDeviceGetMemoryInfo", "memory_reserved", &reserved);
    // v1 counts reserved memory as used, as the real v1 call does.
    m->total = total;
    m->used = used + reserved;
    m->free = total - used - reserved;
    return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, unsigned sensor, unsigned* t) {
    if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    return number(h, "nvmlDeviceGetTemperature", "temperature", t);
}
FAKE_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned* mw) {
    return number(h, "nvmlDeviceGetPowerUsage", "power_mw", mw);
}
FAKE_API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned* mw) {
    return number(h, "nvmlDeviceGetEnforcedPowerLimit", "power_limit_mw", mw);
}
FAKE_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, unsigned type, unsigned* mhz) {
    return number(h, "nvmlDeviceGetClockInfo", type == NVML_CLOCK_MEM ? "mem_clock" : "sm_clock", mhz);
}
FAKE_API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, unsigned type, unsigned* mhz) {
    return number(h, "nvmlDeviceGetMaxClockInfo", type == NVML_CLOCK_MEM ? "mem_clock_max" : "sm_clock_max", mhz);
}
FAKE_API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t h, unsigned long long* mask) {
    return number(h, "nvmlDeviceGetCurrentClocksEventReasons", "clock_event_reasons", mask);
}
FAKE_API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long* mask) {
    return number(h, "nvmlDeviceGetCurrentClocksThrottleReasons", "clock_event_reasons", mask);
}
FAKE_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t h, unsigned* v) {
    return number(h, "nvmlDeviceGetCurrPcieLinkGeneration", "pcie_gen", v);
}
FAKE_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t h, unsigned* v) {
    return number(h, "nvmlDeviceGetMaxPcieLinkGeneration", "pcie_gen_max", v);
}
FAKE_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t h, unsigned* v) {
    return number(h, "nvmlDeviceGetCurrPcieLinkWidth", "pcie_width", v);
}
FAKE_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t h, unsigned* v) {
    return number(h, "nvmlDeviceGetMaxPcieLinkWidth", "pcie_width_max", v);
}
FAKE_API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t h, unsigned counter, unsigned* kbps) {
    {
        std::lock_guard lock(g_mutex);
        g.root["pcie_throughput_calls"] = g.root.value("pcie_throughput_calls", 0) + 1;
    }
    return number(h, "nvmlDeviceGetPcieThroughput",
                  counter == NVML_PCIE_UTIL_RX_BYTES ? "pcie_rx_kbps" : "pcie_tx_kbps", kbps);
}
FAKE_API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t h, unsigned type, unsigned counter,
                                                  unsigned long long* n) {
    if (counter != NVML_VOLATILE_ECC) return NVML_ERROR_NOT_SUPPORTED;
    return number(h, "nvmlDeviceGetTotalEccErrors",
                  type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED ? "ecc_uncorrected_volatile" : "ecc_corrected_volatile",
                  n);
}
// The energy counter grows as if each tick lasted a second at that tick's power: "energy_mj" is
// where it starts.
FAKE_API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long* mj) {
    unsigned long long start = 0;
    if (nvmlReturn_t rc = number(h, "nvmlDeviceGetTotalEnergyConsumption", "energy_mj", &start)) return rc;
    std::lock_guard lock(g_mutex);
    *mj = start + counter_now(*device(h), "power_mw");
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t h, unsigned* n) {
    return number(h, "nvmlDeviceGetPcieReplayCounter", "pcie_replays", n);
}
// /dev/nvidiaN: the scenario's "minor_number", else the device's position in the scenario.
FAKE_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t h, unsigned* minor) {
    nvmlReturn_t rc = number(h, "nvmlDeviceGetMinorNumber", "minor_number", minor);
    if (rc != NVML_ERROR_NOT_SUPPORTED) return rc;
    std::lock_guard lock(g_mutex);
    const Device* d = device(h);
    if (!d || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = static_cast<unsigned>(d->id);
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t h, unsigned* mode) {
    return number(h, "nvmlDeviceGetPersistenceMode", "persistence_mode", mode);
}
FAKE_API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t h, unsigned* mode) {
    return number(h, "nvmlDeviceGetComputeMode", "compute_mode", mode);
}
FAKE_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned* current, unsigned* pending) {
    nvmlReturn_t rc = number(h, "nvmlDeviceGetMigMode", "mig_mode", current);
    if (rc == NVML_SUCCESS && pending) *pending = *current;
    return rc;
}

FAKE_API nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t h, unsigned* percent) {
    return number(h, "nvmlDeviceGetFanSpeed", "fan_speed", percent);
}
FAKE_API nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t h, unsigned* percent, unsigned* period_us) {
    if (period_us) *period_us = 167000;
    return number(h, "nvmlDeviceGetEncoderUtilization", "encoder_util", percent);
}
FAKE_API nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t h, unsigned* percent, unsigned* period_us) {
    if (period_us) *period_us = 167000;
    return number(h, "nvmlDeviceGetDecoderUtilization", "decoder_util", percent);
}
// Retired pages: "retired_pages_sbe" (multiple single-bit errors) and "retired_pages_dbe"; the count
// alone when no buffer is given, as the real call allows.
FAKE_API nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t h, unsigned cause, unsigned* count,
                                                unsigned long long* addresses) {
    unsigned n = 0;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    const char* key =
        cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? "retired_pages_dbe" : "retired_pages_sbe";
    if (nvmlReturn_t rc = number(h, "nvmlDeviceGetRetiredPages", key, &n)) return rc;
    const unsigned room = *count;
    *count = n;
    if (!addresses || room < n) return n == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
    for (unsigned i = 0; i < n; ++i) addresses[i] = 0x1000ULL * (i + 1);
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t h, unsigned* corrected, unsigned* uncorrected,
                                                unsigned* pending, unsigned* failed) {
    if (!corrected || !uncorrected || !pending || !failed) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = number(h, "nvmlDeviceGetRemappedRows", "remapped_rows_corrected", corrected)) return rc;
    if (nvmlReturn_t rc = number(h, "nvmlDeviceGetRemappedRows", "remapped_rows_uncorrected", uncorrected)) return rc;
    *pending = *failed = 0;
    number(h, "nvmlDeviceGetRemappedRows", "remapping_pending", pending);
    number(h, "nvmlDeviceGetRemappedRows", "remapping_failed", failed);
    return NVML_SUCCESS;
}
// The memory's temperature (field 82, "memory_temperature"), and NVLink data counters, per active link (see
// "nvlink_remotes"): each tick adds "nvlink_rx_kib" and
// "nvlink_tx_kib" (that tick's values) to every link's counter, as if a tick lasted a second.
FAKE_API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t h, int count, nvmlFieldValue_t* values) {
    std::lock_guard lock(g_mutex);
    Device* d = device(h);
    if (!d || count < 0 || (count > 0 && !values)) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = injected("nvmlDeviceGetFieldValues", d->id)) return rc;
    const json& remotes = value(*d, "nvlink_remotes");
    const auto now = static_cast<std::size_t>(current_tick(d->id));
    for (int i = 0; i < count; ++i) {
        nvmlFieldValue_t& f = values[i];
        if (f.fieldId == NVML_FI_DEV_MEMORY_TEMP) {  // "memory_temperature" (C); absent: a board without the sensor
            const json& t = value(*d, "memory_temperature");
            f.timestamp = static_cast<long long>(now + 1) * 1000000LL;
            f.latencyUsec = 0;
            f.nvmlReturn = t.is_number() ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
            f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
            if (t.is_number()) f.value.uiVal = t.get<unsigned>();
            continue;
        }
        const char* key = f.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX   ? "nvlink_rx_kib"
                          : f.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ? "nvlink_tx_kib"
                                                                               : nullptr;
        f.timestamp = static_cast<long long>(now + 1) * 1000000LL;
        f.latencyUsec = 0;
        if (!key || !remotes.is_array() || f.scopeId >= remotes.size() || value(*d, key).is_null()) {
            f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        f.nvmlReturn = NVML_SUCCESS;
        f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        f.value.ullVal = counter_now(*d, key);
    }
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t h, unsigned* count) {
    std::lock_guard lock(g_mutex);
    Device* d = device(h);
    if (!d || !count) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = injected("nvmlDeviceGetMaxMigDeviceCount", d->id)) return rc;
    if (value(*d, "mig_mode").is_null()) return NVML_ERROR_NOT_SUPPORTED;
    *count = 7;  // an H100's most
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t h, unsigned index, nvmlDevice_t* mig) {
    std::lock_guard lock(g_mutex);
    Device* d = device(h);
    if (!d || !mig || index >= 7) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = injected("nvmlDeviceGetMigDeviceHandleByIndex", d->id)) return rc;
    const json& instances = value(*d, "mig_instances");
    if (value(*d, "mig_mode") != 1 || !instances.is_array() || index >= instances.size()) return NVML_ERROR_NOT_FOUND;
    *mig = mig_handle(d->id, index);
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t h, unsigned* id) {
    return number(h, "nvmlDeviceGetGpuInstanceId", "gpu_instance_id", id);
}
FAKE_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t h, unsigned* id) {
    return number(h, "nvmlDeviceGetComputeInstanceId", "compute_instance_id", id);
}

FAKE_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned* count, void* infos) {
    return processes(h, "nvmlDeviceGetComputeRunningProcesses_v3", "compute", count, infos, g.record_bytes);
}
FAKE_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t h, unsigned* count, void* infos) {
    return processes(h, "nvmlDeviceGetComputeRunningProcesses_v2", "compute", count, infos, 24);
}
FAKE_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t h, unsigned* count, void* infos) {
    return processes(h, "nvmlDeviceGetComputeRunningProcesses", "compute", count, infos, 16);
}
FAKE_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t h, unsigned* count, void* infos) {
    return processes(h, "nvmlDeviceGetGraphicsRunningProcesses_v3", "graphics", count, infos, g.record_bytes);
}
FAKE_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t h, unsigned* count, void* infos) {
    return processes(h, "nvmlDeviceGetGraphicsRunningProcesses_v2", "graphics", count, infos, 24);
}
FAKE_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t h, unsigned* count, void* infos) {
    return processes(h, "nvmlDeviceGetGraphicsRunningProcesses", "graphics", count, infos, 16);
}

FAKE_API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t h, nvmlProcessUtilizationSample_t* samples,
                                                      unsigned* count, unsigned long long last_seen) {
    std::lock_guard lock(g_mutex);
    Device* d = device(h);
    if (!d || !count) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = injected("nvmlDeviceGetProcessUtilization", d->id)) return rc;
    // One sample per process per tick, stamped (tick + 1) seconds in microseconds.
    unsigned long long stamp = static_cast<unsigned long long>(current_tick(d->id) + 1) * 1000000ULL;
    std::vector<nvmlProcessUtilizationSample_t> out;
    const json& list = value(*d, "processes");
    if (list.is_array() && stamp > last_seen)
        for (const json& p : list)
            if (p.contains("sm_util"))
                out.push_back({p.value("pid", 0u), stamp, p["sm_util"].get<unsigned>(), 0, 0, 0});
    if (out.empty()) {
        *count = 0;
        return NVML_ERROR_NOT_FOUND;
    }
    if (!samples || *count < out.size()) {
        *count = static_cast<unsigned>(out.size());
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    std::memcpy(samples, out.data(), out.size() * sizeof out[0]);
    *count = static_cast<unsigned>(out.size());
    return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t h, nvmlGpmSupport_t* s) {
    unsigned supported = 0;
    nvmlReturn_t rc = number(h, "nvmlGpmQueryDeviceSupport", "gpm_supported", &supported);
    if (!s || s->version != 1) return NVML_ERROR_INVALID_ARGUMENT;
    s->isSupportedDevice = rc == NVML_SUCCESS ? supported : 0;
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* s) {
    *s = reinterpret_cast<nvmlGpmSample_t>(new GpmSample);
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
    delete reinterpret_cast<GpmSample*>(s);
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t h, nvmlGpmSample_t s) {
    std::lock_guard lock(g_mutex);
    Device* d = device(h);
    if (!d || !s) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = injected("nvmlGpmSampleGet", d->id)) return rc;
    auto* gs = reinterpret_cast<GpmSample*>(s);
    gs->device = d->id;
    gs->tick = current_tick(d->id);
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* m) {
    std::lock_guard lock(g_mutex);
    if (!m || m->version != 1) return NVML_ERROR_INVALID_ARGUMENT;
    auto* a = reinterpret_cast<GpmSample*>(m->sample1);
    auto* b = reinterpret_cast<GpmSample*>(m->sample2);
    if (!a || !b || a->device != b->device || a->device < 0) return NVML_ERROR_INVALID_ARGUMENT;
    const Device& d = g.devices[static_cast<std::size_t>(b->device)];
    for (unsigned i = 0; i < m->numMetrics; ++i) {
        const char* key = m->metrics[i].metricId == NVML_GPM_METRIC_SM_UTIL           ? "sm_activity"
                          : m->metrics[i].metricId == NVML_GPM_METRIC_ANY_TENSOR_UTIL ? "tensor_activity"
                                                                                      : nullptr;
        json v = key ? value(d, key) : json();
        m->metrics[i].nvmlReturn = v.is_null() ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
        m->metrics[i].value = v.is_null() ? 0.0 : v.get<double>();
    }
    return NVML_SUCCESS;
}

// The topology: each device's "topology_levels" (NVML's common-ancestor level towards each device,
// by scenario index) and "nvlink_remotes" (the PCI bus id at the far end of each active NVLink).
FAKE_API nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int* level) {
    std::lock_guard lock(g_mutex);
    Device* da = device(a);
    Device* db = device(b);
    if (!da || !db || !level) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = injected("nvmlDeviceGetTopologyCommonAncestor", da->id)) return rc;
    const json& levels = value(*da, "topology_levels");
    if (!levels.is_array() || static_cast<std::size_t>(db->id) >= levels.size()) return NVML_ERROR_NOT_SUPPORTED;
    *level = levels[static_cast<std::size_t>(db->id)].get<int>();
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t h, unsigned link, unsigned* active) {
    std::lock_guard lock(g_mutex);
    Device* d = device(h);
    if (!d || !active) return NVML_ERROR_INVALID_ARGUMENT;
    const json& remotes = value(*d, "nvlink_remotes");
    if (!remotes.is_array() || link >= remotes.size()) return NVML_ERROR_NOT_SUPPORTED;
    *active = 1;
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t h, unsigned link, nvmlPciInfo_t* pci) {
    std::lock_guard lock(g_mutex);
    Device* d = device(h);
    if (!d || !pci) return NVML_ERROR_INVALID_ARGUMENT;
    const json& remotes = value(*d, "nvlink_remotes");
    if (!remotes.is_array() || link >= remotes.size()) return NVML_ERROR_NOT_SUPPORTED;
    std::memset(pci, 0, sizeof *pci);
    std::snprintf(pci->busId, sizeof pci->busId, "%s", remotes[link].get<std::string>().c_str());
    return NVML_SUCCESS;
}

// XID events: the scenario's "xid_events", each {"device", "xid", "tick", "count"}: from the device's
// tick `tick` on, `count` events of that XID are waiting (a storm: thousands). nvmlEventSetWait_v2
// hands out one per call, else waits its timeout (in steps, without the lock) and says TIMEOUT.
// A device whose values set "xid_supported": 0 does not support the event type. The hang injection
// applies to "nvmlEventSetWait_v2" like to any call.
struct FakeEventSet {
    std::vector<int> devices;              // registered for XIDs
    std::vector<std::uint64_t> delivered;  // per "xid_events" entry
};

FAKE_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
    if (!set) return NVML_ERROR_INVALID_ARGUMENT;
    *set = reinterpret_cast<nvmlEventSet_t>(new FakeEventSet);
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    delete reinterpret_cast<FakeEventSet*>(set);
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t h, unsigned long long* types) {
    std::lock_guard lock(g_mutex);
    Device* d = device(h);
    if (!d || !types) return NVML_ERROR_INVALID_ARGUMENT;
    const json& v = value(*d, "xid_supported");
    *types = (v.is_null() || v.get<int>() != 0) ? nvmlEventTypeXidCriticalError | 0x1ULL : 0x1ULL;
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t h, unsigned long long types, nvmlEventSet_t set) {
    std::lock_guard lock(g_mutex);
    Device* d = device(h);
    if (!d || !set) return NVML_ERROR_INVALID_ARGUMENT;
    const json& v = value(*d, "xid_supported");
    if ((types & nvmlEventTypeXidCriticalError) && !v.is_null() && v.get<int>() == 0) return NVML_ERROR_NOT_SUPPORTED;
    reinterpret_cast<FakeEventSet*>(set)->devices.push_back(d->id);
    return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeout_ms) {
    auto* es = reinterpret_cast<FakeEventSet*>(set);
    if (!es || !data) return NVML_ERROR_INVALID_ARGUMENT;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
        {
            std::lock_guard lock(g_mutex);
            if (nvmlReturn_t rc = injected("nvmlEventSetWait_v2", es->devices.empty() ? -1 : es->devices[0])) return rc;
            const json events = g.root.value("xid_events", json::array());
            es->delivered.resize(events.size());
            for (std::size_t i = 0; i < events.size(); ++i) {
                const int dev = events[i].value("device", 0);
                if (std::find(es->devices.begin(), es->devices.end(), dev) == es->devices.end()) continue;
                if (current_tick(dev) < events[i].value("tick", 0L)) continue;
                if (es->delivered[i] >= events[i].value("count", 1ULL)) continue;
                ++es->delivered[i];
                data->device = reinterpret_cast<nvmlDevice_t>(static_cast<std::uintptr_t>(dev + 1));
                data->eventType = nvmlEventTypeXidCriticalError;
                data->eventData = events[i].value("xid", 0ULL);
                data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
                return NVML_SUCCESS;
            }
        }
        if (std::chrono::steady_clock::now() >= until) return NVML_ERROR_TIMEOUT;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // extern "C"
