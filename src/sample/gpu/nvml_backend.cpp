// The NVML backend. All NVML calls run on one worker thread owned by the backend; read()
// hands it a request and waits, checking that no single NVML call has been running longer
// than the deadline. A call that overruns leaves the worker stuck inside the driver: read()
// then returns the last good values marked stale, immediately, until the call comes back.
// One hand-off per tick (not per call) keeps the cost of the deadline to microseconds.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "core/clock.hpp"
#include "core/thread_name.hpp"
#include "sample/gpu/gpu_backend.hpp"
#include "sample/gpu/nvml_library.hpp"
#include "sample/gpu/process_records.hpp"
#include "sample/gpu/throttle_reasons.hpp"

namespace baton {

namespace {

std::atomic<bool> g_worker_abandoned{false};

std::string library_path(const NvmlOptions& o) {
    if (!o.library_path.empty()) return o.library_path;
    if (const char* e = std::getenv("BATON_NVML_LIBRARY"); e && *e) return e;
    return "libnvidia-ml.so.1";
}

// Per-device state the worker keeps between ticks.
struct Device {
    nvmlDevice_t handle = nullptr;
    GpuInfo info;  // static fields filled once; dynamic ones overwritten each tick
    double pcie_read_at = -1e18;
    std::optional<double> pcie_rx, pcie_tx;
    unsigned long long last_util_timestamp = 0;
    bool gpm_supported = false;
    bool memory_temperature_supported = true;  // until the driver says otherwise for this GPU
    nvmlGpmSample_t gpm_samples[2] = {nullptr, nullptr};
    int gpm_current = 0;
    bool gpm_have_previous = false;
    bool lost = false;
    // Read every pcie_interval_seconds: memory health and temperature, which NVLinks are up, the MIG devices.
    double slow_read_at = -1e18;
    std::vector<unsigned> nvlinks;                       // the active links
    std::optional<double> nvlink_rx_kib, nvlink_tx_kib;  // the counters at nvlink_read_at
    double nvlink_read_at = 0;
    long long nvlink_stamp_us = 0;  // the driver's time of those counters (0: none given)
    std::vector<std::pair<nvmlDevice_t, MigInstance>> migs;
};

// Everything the worker thread touches lives here, shared with the backend object, so a
// worker stuck in the driver past the backend's destruction still points at live memory.
struct Shared {
    std::mutex m;
    std::condition_variable wake_worker, wake_reader;
    bool request = false;
    bool busy = false;
    bool quit = false;
    double request_now = 0;
    GpuReading result;
    bool result_ready = false;  // `result` holds a reading end() has not taken yet

    // Set by the worker around each NVML call, read by the waiting reader.
    std::atomic<const char*> current_call{nullptr};
    std::atomic<double> call_started{0};
    // Set by the worker once the library or driver failed for good; the reader then answers
    // from that result without waking the worker (every tick on a machine without a GPU).
    std::atomic<bool> permanent_failure{false};

    // Worker-only state.
    NvmlOptions options;
    bool attempted_init = false;
    std::string init_failure;                // permanent reason no GPU can be read
    GpuState init_state = GpuState::failed;  // what it means: no driver, or one that failed
    NvmlLibrary lib;
    std::optional<std::string> driver_version, nvml_version, cuda_driver_version;
    std::vector<Device> devices;
    std::vector<unsigned char> process_buffer;
    std::vector<nvmlProcessUtilizationSample_t> util_buffer;

    // XID events, polled on a thread of their own (xid_main) so that an event storm or a call stuck
    // in the driver never holds up a tick; the tick reads the counts.
    struct XidWatch {
        std::mutex m;
        std::condition_variable ended;  // wakes the thread to stop, and the backend when it has
        std::map<std::pair<nvmlDevice_t, std::uint64_t>, XidCount> counts;  // by GPU handle and XID
        bool stop = false;
        bool running = false;
    } xid;
    bool xid_started = false;  // worker-only: the watch was set up (or found impossible)
    nvmlEventSet_t xid_set = nullptr;
    std::vector<nvmlDevice_t> xid_devices;  // the GPUs registered for XID events
    std::thread xid_thread;
};

class Caller {
  public:
    explicit Caller(Shared& s) : s_(s) {}
    template <typename F>
    nvmlReturn_t operator()(const char* name, F&& f) {
        s_.call_started.store(monotonic_seconds());
        s_.current_call.store(name);
        nvmlReturn_t rc = f();
        s_.current_call.store(nullptr);
        return rc;
    }

  private:
    Shared& s_;
};

bool initialize(Shared& s) {
    s.attempted_init = true;
    Caller call(s);
    std::string path = library_path(s.options);
    Result<NvmlLibrary> lib = [&] {
        s.call_started.store(monotonic_seconds());
        s.current_call.store("dlopen");
        auto r = load_nvml_library(path);
        s.current_call.store(nullptr);
        return r;
    }();
    if (!lib.ok()) {
        s.init_failure = lib.error().message;
        s.init_state = lib.error().is(ErrorCode::not_found) ? GpuState::no_driver : GpuState::failed;
        return false;
    }
    s.lib = std::move(lib.value());
    NvmlLibrary& L = s.lib;
    nvmlReturn_t rc = call("nvmlInit_v2", [&] { return L.init(); });
    if (rc != NVML_SUCCESS) {
        s.init_failure = "NVML initialisation failed: " + L.describe(rc);
        return false;
    }
    char version[96];
    if (L.driver_version &&
        call("nvmlSystemGetDriverVersion", [&] { return L.driver_version(version, sizeof version); }) == NVML_SUCCESS)
        s.driver_version = version;
    if (L.nvml_version &&
        call("nvmlSystemGetNVMLVersion", [&] { return L.nvml_version(version, sizeof version); }) == NVML_SUCCESS)
        s.nvml_version = version;
    int cuda = 0;
    if (L.cuda_driver_version &&
        call("nvmlSystemGetCudaDriverVersion", [&] { return L.cuda_driver_version(&cuda); }) == NVML_SUCCESS &&
        cuda > 0)
        s.cuda_driver_version = std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10);  // 12040 -> 12.4
    unsigned count = 0;
    rc = call("nvmlDeviceGetCount_v2", [&] { return L.device_count(&count); });
    if (rc != NVML_SUCCESS) {
        s.init_failure = "NVML cannot count devices: " + L.describe(rc);
        return false;
    }
    for (unsigned i = 0; i < count; ++i) {
        Device d;
        rc = call("nvmlDeviceGetHandleByIndex_v2", [&] { return L.handle_by_index(i, &d.handle); });
        if (rc != NVML_SUCCESS) {
            // A device NVML cannot open (no permission, lost) is still shown, with its error.
            d.info.error = L.describe(rc);
            d.info.name = "unavailable";
            d.lost = true;
            s.devices.push_back(std::move(d));
            continue;
        }
        char buf[128];
        if (L.uuid && call("nvmlDeviceGetUUID", [&] { return L.uuid(d.handle, buf, sizeof buf); }) == NVML_SUCCESS)
            d.info.uuid = buf;
        if (L.name && call("nvmlDeviceGetName", [&] { return L.name(d.handle, buf, sizeof buf); }) == NVML_SUCCESS)
            d.info.name = buf;
        nvmlPciInfo_t pci{};
        if (L.pci_info && call("nvmlDeviceGetPciInfo_v3", [&] { return L.pci_info(d.handle, &pci); }) == NVML_SUCCESS)
            d.info.pci_bus_id = pci.busId;
        unsigned v = 0;
        if (L.minor_number &&
            call("nvmlDeviceGetMinorNumber", [&] { return L.minor_number(d.handle, &v); }) == NVML_SUCCESS)
            d.info.minor_number = v;
        if (L.max_clock &&
            call("nvmlDeviceGetMaxClockInfo", [&] { return L.max_clock(d.handle, NVML_CLOCK_SM, &v); }) == NVML_SUCCESS)
            d.info.sm_clock_max_mhz = v;
        if (L.max_clock && call("nvmlDeviceGetMaxClockInfo",
                                [&] { return L.max_clock(d.handle, NVML_CLOCK_MEM, &v); }) == NVML_SUCCESS)
            d.info.memory_clock_max_mhz = v;
        if (L.pcie_gen_max &&
            call("nvmlDeviceGetMaxPcieLinkGeneration", [&] { return L.pcie_gen_max(d.handle, &v); }) == NVML_SUCCESS)
            d.info.pcie_generation_max = v;
        if (L.pcie_width_max &&
            call("nvmlDeviceGetMaxPcieLinkWidth", [&] { return L.pcie_width_max(d.handle, &v); }) == NVML_SUCCESS)
            d.info.pcie_width_max = v;
        if (L.gpm_query_support && L.gpm_sample_alloc && L.gpm_sample_get && L.gpm_metrics_get) {
            nvmlGpmSupport_t sup{};
            sup.version = 1;
            if (call("nvmlGpmQueryDeviceSupport", [&] { return L.gpm_query_support(d.handle, &sup); }) ==
                    NVML_SUCCESS &&
                sup.isSupportedDevice &&
                call("nvmlGpmSampleAlloc", [&] { return L.gpm_sample_alloc(&d.gpm_samples[0]); }) == NVML_SUCCESS &&
                call("nvmlGpmSampleAlloc", [&] { return L.gpm_sample_alloc(&d.gpm_samples[1]); }) == NVML_SUCCESS)
                d.gpm_supported = true;
        }
        s.devices.push_back(std::move(d));
    }
    // Indices in PCI bus order (NVML's own order already is on Linux; sorting makes it a rule).
    std::stable_sort(s.devices.begin(), s.devices.end(),
                     [](const Device& a, const Device& b) { return a.info.pci_bus_id < b.info.pci_bus_id; });
    for (unsigned i = 0; i < s.devices.size(); ++i) s.devices[i].info.index = i;
    return true;
}

// Reads the process list of one kind (compute or graphics) of `handle` (a GPU or a MIG device)
// into `out`. `memory_total` bounds plausible records (0: unknown).
void read_processes(Shared& s, nvmlDevice_t handle, std::uint64_t memory_total,
                    nvmlReturn_t (*fn)(nvmlDevice_t, unsigned*, void*), const char* name, GpuProcessType type,
                    std::vector<GpuProcess>& out) {
    Caller call(s);
    NvmlLibrary& L = s.lib;
    // Room for 32-byte records whatever the symbol claims (R535 guard).
    for (int attempt = 0; attempt < 3; ++attempt) {
        unsigned count = static_cast<unsigned>(s.process_buffer.size() / 32);
        std::fill(s.process_buffer.begin(), s.process_buffer.end(), 0);
        nvmlReturn_t rc = call(name, [&] { return fn(handle, &count, s.process_buffer.data()); });
        if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
            s.process_buffer.resize(std::max<std::size_t>(count + 8, 64) * 32);
            continue;
        }
        if (rc != NVML_SUCCESS) return;
        auto raw = decode_process_records(s.process_buffer.data(), s.process_buffer.size(), count, L.process_stride,
                                          memory_total);
        for (const auto& r : raw) {
            GpuProcess p;
            p.pid = r.pid;
            p.used_memory_bytes = r.used_memory_bytes;
            p.type = type;
            p.gpu_instance_id = r.gpu_instance_id;
            p.compute_instance_id = r.compute_instance_id;
            out.push_back(p);
        }
        return;
    }
}

// The values that change seldom and cost a dozen calls: ECC corrections, retired pages and
// remapped rows, which NVLinks are up, the MIG devices. False when the GPU fell off the bus.
// A field value's number, from the integer types NVML answers in (a double is not expected); none
// when the entry failed.
std::optional<double> field_number(const nvmlFieldValue_t& v) {
    if (v.nvmlReturn != NVML_SUCCESS) return std::nullopt;
    switch (v.valueType) {
        case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
            return static_cast<double>(v.value.ullVal);
        case NVML_VALUE_TYPE_UNSIGNED_LONG:
            return static_cast<double>(v.value.ulVal);
        case NVML_VALUE_TYPE_UNSIGNED_INT:
            return v.value.uiVal;
        case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
            return static_cast<double>(v.value.sllVal);
        case NVML_VALUE_TYPE_SIGNED_INT:
            return v.value.siVal;
        default:
            return std::nullopt;
    }
}

// The memory's temperature, a field value (dcgm-exporter's DCGM_FI_DEV_MEMORY_TEMP), in the slow
// group: it moves over seconds. A GPU without the sensor (GDDR boards) says so once and is not asked
// again; a reading no sensor gives (0 C and below, 150 C and above) is the driver's filler.
bool read_memory_temperature(Shared& s, Device& d) {
    NvmlLibrary& L = s.lib;
    d.info.memory_temperature_celsius.reset();
    if (!L.field_values || !d.memory_temperature_supported) return true;
    nvmlFieldValue_t f{};
    f.fieldId = NVML_FI_DEV_MEMORY_TEMP;
    const nvmlReturn_t rc = Caller(s)("nvmlDeviceGetFieldValues", [&] { return L.field_values(d.handle, 1, &f); });
    if (rc == NVML_ERROR_GPU_IS_LOST) return false;
    if (rc == NVML_ERROR_NOT_SUPPORTED || (rc == NVML_SUCCESS && f.nvmlReturn == NVML_ERROR_NOT_SUPPORTED)) {
        d.memory_temperature_supported = false;
        return true;
    }
    const std::optional<double> t = rc == NVML_SUCCESS ? field_number(f) : std::nullopt;
    if (t && *t > 0 && *t < 150) d.info.memory_temperature_celsius = t;
    return true;
}

bool read_slow(Shared& s, Device& d) {
    Caller call(s);
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    nvmlReturn_t rc;
    auto gone = [&](nvmlReturn_t r) { return r == NVML_ERROR_GPU_IS_LOST; };

    g.ecc_corrected_volatile.reset();
    if (L.ecc_total) {
        unsigned long long e = 0;
        rc = call("nvmlDeviceGetTotalEccErrors",
                  [&] { return L.ecc_total(d.handle, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &e); });
        if (gone(rc)) return false;
        if (rc == NVML_SUCCESS) g.ecc_corrected_volatile = e;
    }
    g.retired_pages.reset();
    if (L.retired_pages) {
        std::uint64_t pages = 0;
        bool known = true;
        for (unsigned cause : {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                               NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR}) {
            unsigned n = 0;  // 0 with no buffer: only the count is asked for
            rc = call("nvmlDeviceGetRetiredPages", [&] { return L.retired_pages(d.handle, cause, &n, nullptr); });
            if (gone(rc)) return false;
            if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE)
                pages += n;
            else
                known = false;
        }
        if (known) g.retired_pages = pages;
    }
    g.remapped_rows_corrected.reset();
    g.remapped_rows_uncorrected.reset();
    g.remapping_pending.reset();
    g.remapping_failed.reset();
    if (L.remapped_rows) {
        unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
        rc = call("nvmlDeviceGetRemappedRows",
                  [&] { return L.remapped_rows(d.handle, &corrected, &uncorrected, &pending, &failed); });
        if (gone(rc)) return false;
        if (rc == NVML_SUCCESS) {
            g.remapped_rows_corrected = corrected;
            g.remapped_rows_uncorrected = uncorrected;
            g.remapping_pending = pending != 0;
            g.remapping_failed = failed != 0;
        }
    }
    if (!read_memory_temperature(s, d)) return false;
    // NVLinks: a link NVML does not answer for does not exist on this GPU; no answer at all, no NVLink.
    d.nvlinks.clear();
    g.nvlink_links_active.reset();
    if (L.nvlink_state) {
        bool any = false;
        for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
            unsigned active = 0;
            rc = call("nvmlDeviceGetNvLinkState", [&] { return L.nvlink_state(d.handle, link, &active); });
            if (gone(rc)) return false;
            if (rc != NVML_SUCCESS) continue;
            any = true;
            if (active) d.nvlinks.push_back(link);
        }
        if (any) g.nvlink_links_active = static_cast<unsigned>(d.nvlinks.size());
    }
    // MIG devices: their handles stay valid until the instances are reconfigured, which needs an
    // administrator and an idle GPU; reading them this seldom is enough.
    std::vector<std::pair<nvmlDevice_t, MigInstance>> migs;
    unsigned max = 0;
    if (g.mig_mode.value_or(false) && L.max_mig_devices && L.mig_device_by_index && L.gpu_instance_id &&
        L.compute_instance_id) {
        rc = call("nvmlDeviceGetMaxMigDeviceCount", [&] { return L.max_mig_devices(d.handle, &max); });
        if (gone(rc)) return false;
        if (rc != NVML_SUCCESS) max = 0;
    }
    for (unsigned i = 0; i < std::min(max, 64u); ++i) {
        nvmlDevice_t h = nullptr;
        rc = call("nvmlDeviceGetMigDeviceHandleByIndex", [&] { return L.mig_device_by_index(d.handle, i, &h); });
        if (gone(rc)) return false;
        if (rc != NVML_SUCCESS) continue;  // NOT_FOUND: no MIG device in this slot
        MigInstance m;
        unsigned id = 0;
        if (call("nvmlDeviceGetGpuInstanceId", [&] { return L.gpu_instance_id(h, &id); }) != NVML_SUCCESS) continue;
        m.gpu_instance_id = id;
        if (call("nvmlDeviceGetComputeInstanceId", [&] { return L.compute_instance_id(h, &id); }) != NVML_SUCCESS)
            continue;
        m.compute_instance_id = id;
        char buf[128];
        if (L.uuid && call("nvmlDeviceGetUUID", [&] { return L.uuid(h, buf, sizeof buf); }) == NVML_SUCCESS)
            m.uuid = buf;
        if (L.name && call("nvmlDeviceGetName", [&] { return L.name(h, buf, sizeof buf); }) == NVML_SUCCESS)
            m.name = buf;
        migs.emplace_back(h, std::move(m));
    }
    std::sort(migs.begin(), migs.end(), [](const auto& a, const auto& b) {
        return std::pair(a.second.gpu_instance_id, a.second.compute_instance_id) <
               std::pair(b.second.gpu_instance_id, b.second.compute_instance_id);
    });
    d.migs = std::move(migs);
    return true;
}

// NVLink data moved since the last tick, both ways, over the active links: NVML counts KiB per
// link since the driver loaded. Absent on the first reading and when a counter went back.
bool read_nvlink_traffic(Shared& s, Device& d, double now) {
    Caller call(s);
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    g.nvlink_rx_bytes_per_second.reset();
    g.nvlink_tx_bytes_per_second.reset();
    if (!L.field_values || d.nvlinks.empty()) {
        d.nvlink_rx_kib.reset();
        d.nvlink_tx_kib.reset();
        return true;
    }
    std::vector<nvmlFieldValue_t> f(2 * d.nvlinks.size());
    for (std::size_t i = 0; i < d.nvlinks.size(); ++i) {
        f[2 * i].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
        f[2 * i + 1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
        f[2 * i].scopeId = f[2 * i + 1].scopeId = d.nvlinks[i];
    }
    nvmlReturn_t rc = call("nvmlDeviceGetFieldValues",
                           [&] { return L.field_values(d.handle, static_cast<int>(f.size()), f.data()); });
    if (rc == NVML_ERROR_GPU_IS_LOST) return false;
    std::optional<double> rx = 0.0, tx = 0.0;
    long long stamp = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
        std::optional<double>& sum = i % 2 ? tx : rx;
        const nvmlFieldValue_t& v = f[i];
        const std::optional<double> x = rc == NVML_SUCCESS ? field_number(v) : std::nullopt;
        if (!x) {
            sum.reset();
            continue;
        }
        stamp = std::max(stamp, v.timestamp);
        if (sum) *sum += *x;
    }
    // Over the driver's own sampling times when it gives them (our clock also counts the wait for
    // the call), else over ours.
    const double dt = stamp > 0 && d.nvlink_stamp_us > 0 && stamp > d.nvlink_stamp_us
                          ? static_cast<double>(stamp - d.nvlink_stamp_us) / 1e6
                          : now - d.nvlink_read_at;
    auto rate = [&](const std::optional<double>& before, const std::optional<double>& after) -> std::optional<double> {
        if (!before || !after || *after < *before || !(dt > 0)) return std::nullopt;
        return (*after - *before) * 1024.0 / dt;
    };
    g.nvlink_rx_bytes_per_second = rate(d.nvlink_rx_kib, rx);
    g.nvlink_tx_bytes_per_second = rate(d.nvlink_tx_kib, tx);
    d.nvlink_rx_kib = rx;
    d.nvlink_tx_kib = tx;
    d.nvlink_read_at = now;
    d.nvlink_stamp_us = stamp;
    return true;
}

// Each MIG device's memory and compute processes. NVML lists a MIG device's processes on its own
// handle; the GPU's handle lists them only to privileged callers, so the ones it left out join
// the GPU's list here, with their instance.
bool read_mig_instances(Shared& s, Device& d) {
    Caller call(s);
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    g.mig_instances.clear();
    if (!g.mig_mode.value_or(false)) return true;
    std::vector<GpuProcess> on_mig;
    for (auto& [h, m] : d.migs) {
        m.memory_total_bytes.reset();
        m.memory_used_bytes.reset();
        nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (L.memory_v2) {
            nvmlMemory_v2_t mem{};
            mem.version = nvmlMemory_v2;
            rc = call("nvmlDeviceGetMemoryInfo_v2", [&, h = h] { return L.memory_v2(h, &mem); });
            if (rc == NVML_SUCCESS) {
                m.memory_total_bytes = mem.total;
                m.memory_used_bytes = mem.used;
            }
        }
        if (rc != NVML_SUCCESS && L.memory_v1) {
            nvmlMemory_t mem{};
            rc = call("nvmlDeviceGetMemoryInfo", [&, h = h] { return L.memory_v1(h, &mem); });
            if (rc == NVML_SUCCESS) {
                m.memory_total_bytes = mem.total;
                m.memory_used_bytes = mem.used;
            }
        }
        if (rc == NVML_ERROR_GPU_IS_LOST) return false;
        m.pids.clear();
        on_mig.clear();
        if (L.compute_processes)
            read_processes(s, h, m.memory_total_bytes.value_or(0), L.compute_processes, L.process_symbol.c_str(),
                           GpuProcessType::compute, on_mig);
        for (GpuProcess& p : on_mig) {
            m.pids.push_back(p.pid);
            p.gpu_instance_id = m.gpu_instance_id;
            p.compute_instance_id = m.compute_instance_id;
            auto same = std::find_if(g.processes.begin(), g.processes.end(),
                                     [&](const GpuProcess& q) { return q.pid == p.pid && q.type == p.type; });
            if (same == g.processes.end()) {
                g.processes.push_back(p);
            } else {
                same->gpu_instance_id = p.gpu_instance_id;
                same->compute_instance_id = p.compute_instance_id;
                if (!same->used_memory_bytes) same->used_memory_bytes = p.used_memory_bytes;
            }
        }
        g.mig_instances.push_back(m);
    }
    return true;
}

// The per-tick readers of one GPU, a group each (nvtop's split: identity and limits are read once
// at start, in initialize(); what changes slowly every pcie_interval_seconds, in read_slow(); these
// every tick). Each resets its fields first, so an answer that stops coming leaves them unknown,
// and returns false when NVML says the GPU is lost (read_device then keeps only its identity).
// Adding a field: the call in the group it belongs to, its row in formats/snapshot_fields.cpp.

bool is_lost(nvmlReturn_t rc) {
    return rc == NVML_ERROR_GPU_IS_LOST;
}

// One unsigned-valued call into `into`: nothing when the entry point is missing, unknown when it
// fails.
template <typename Invoke>
bool read_unsigned(Shared& s, bool present, const char* name, Invoke&& invoke, std::optional<unsigned>& into) {
    into.reset();
    if (!present) return true;
    unsigned x = 0;
    const nvmlReturn_t rc = Caller(s)(name, [&] { return invoke(&x); });
    if (is_lost(rc)) return false;
    if (rc == NVML_SUCCESS) into = x;
    return true;
}

// The same, converted: into = x / divisor (NVML's milliwatts to watts: 1000).
template <typename Invoke>
bool read_scaled(Shared& s, bool present, const char* name, Invoke&& invoke, double divisor,
                 std::optional<double>& into) {
    std::optional<unsigned> x;
    if (!read_unsigned(s, present, name, std::forward<Invoke>(invoke), x)) return false;
    into.reset();
    if (x) into = divisor == 1.0 ? static_cast<double>(*x) : *x / divisor;
    return true;
}

bool read_utilization(Shared& s, Device& d) {
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    g.utilization_percent.reset();
    g.memory_utilization_percent.reset();
    if (!L.utilization) return true;
    nvmlUtilization_t u{};
    const nvmlReturn_t rc = Caller(s)("nvmlDeviceGetUtilizationRates", [&] { return L.utilization(d.handle, &u); });
    if (is_lost(rc)) return false;
    if (rc == NVML_SUCCESS) {
        g.utilization_percent = u.gpu;
        g.memory_utilization_percent = u.memory;
    }
    return true;
}

// Memory with the driver's reserve apart where the driver has _v2, else the v1 numbers.
bool read_memory(Shared& s, Device& d) {
    Caller call(s);
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    g.memory_total_bytes.reset();
    g.memory_used_bytes.reset();
    g.memory_free_bytes.reset();
    g.memory_reserved_bytes.reset();
    nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (L.memory_v2) {
        nvmlMemory_v2_t m{};
        m.version = nvmlMemory_v2;
        rc = call("nvmlDeviceGetMemoryInfo_v2", [&] { return L.memory_v2(d.handle, &m); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) {
            g.memory_total_bytes = m.total;
            g.memory_used_bytes = m.used;
            g.memory_free_bytes = m.free;
            g.memory_reserved_bytes = m.reserved;
        }
    }
    if (rc != NVML_SUCCESS && L.memory_v1) {
        nvmlMemory_t m{};
        rc = call("nvmlDeviceGetMemoryInfo", [&] { return L.memory_v1(d.handle, &m); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) {
            g.memory_total_bytes = m.total;
            g.memory_used_bytes = m.used;
            g.memory_free_bytes = m.free;
        }
    }
    return true;
}

// Temperature, power (NVML's milliwatts), clocks, the PCIe link now, and why the clocks are down.
bool read_thermal_power_clocks(Shared& s, Device& d) {
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    const nvmlDevice_t h = d.handle;
    const bool ok =
        read_scaled(
            s, L.temperature, "nvmlDeviceGetTemperature",
            [&](unsigned* x) { return L.temperature(h, NVML_TEMPERATURE_GPU, x); }, 1.0, g.temperature_celsius) &&
        read_scaled(
            s, L.power_usage, "nvmlDeviceGetPowerUsage", [&](unsigned* x) { return L.power_usage(h, x); }, 1000.0,
            g.power_watts) &&
        read_scaled(
            s, L.power_limit, "nvmlDeviceGetEnforcedPowerLimit", [&](unsigned* x) { return L.power_limit(h, x); },
            1000.0, g.power_limit_watts) &&
        read_unsigned(
            s, L.clock, "nvmlDeviceGetClockInfo", [&](unsigned* x) { return L.clock(h, NVML_CLOCK_SM, x); },
            g.sm_clock_mhz) &&
        read_unsigned(
            s, L.clock, "nvmlDeviceGetClockInfo", [&](unsigned* x) { return L.clock(h, NVML_CLOCK_MEM, x); },
            g.memory_clock_mhz) &&
        read_unsigned(
            s, L.pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration", [&](unsigned* x) { return L.pcie_gen(h, x); },
            g.pcie_generation) &&
        read_unsigned(
            s, L.pcie_width, "nvmlDeviceGetCurrPcieLinkWidth", [&](unsigned* x) { return L.pcie_width(h, x); },
            g.pcie_width);
    if (!ok) return false;
    g.throttle_reasons.reset();
    if (L.clock_reasons) {
        unsigned long long mask = 0;
        const nvmlReturn_t rc =
            Caller(s)("nvmlDeviceGetCurrentClocksEventReasons", [&] { return L.clock_reasons(h, &mask); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) g.throttle_reasons = decode_throttle_reasons(mask);
    }
    return true;
}

// PCIe throughput blocks for about 20 ms inside the driver: sampled at most once per
// pcie_interval_seconds, the last values repeated in between.
bool read_pcie_throughput(Shared& s, Device& d, double now) {
    Caller call(s);
    NvmlLibrary& L = s.lib;
    if (L.pcie_throughput && now - d.pcie_read_at >= s.options.pcie_interval_seconds) {
        d.pcie_read_at = now;
        d.pcie_rx.reset();
        d.pcie_tx.reset();
        unsigned v = 0;
        nvmlReturn_t rc = call("nvmlDeviceGetPcieThroughput",
                               [&] { return L.pcie_throughput(d.handle, NVML_PCIE_UTIL_RX_BYTES, &v); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) d.pcie_rx = v * 1024.0;  // KB/s
        rc = call("nvmlDeviceGetPcieThroughput",
                  [&] { return L.pcie_throughput(d.handle, NVML_PCIE_UTIL_TX_BYTES, &v); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) d.pcie_tx = v * 1024.0;
    }
    d.info.pcie_rx_bytes_per_second = d.pcie_rx;
    d.info.pcie_tx_bytes_per_second = d.pcie_tx;
    return true;
}

// The counters since the driver loaded: uncorrected ECC errors, energy, PCIe replays.
bool read_counters(Shared& s, Device& d) {
    Caller call(s);
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    nvmlReturn_t rc;
    g.ecc_uncorrected_volatile.reset();
    if (L.ecc_total) {
        unsigned long long e = 0;
        rc = call("nvmlDeviceGetTotalEccErrors",
                  [&] { return L.ecc_total(d.handle, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &e); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) g.ecc_uncorrected_volatile = e;
    }
    g.energy_joules_total.reset();
    if (L.energy) {
        unsigned long long mj = 0;
        rc = call("nvmlDeviceGetTotalEnergyConsumption", [&] { return L.energy(d.handle, &mj); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) g.energy_joules_total = static_cast<double>(mj) / 1000.0;
    }
    g.pcie_replay_total.reset();
    if (L.pcie_replays) {
        unsigned v = 0;
        rc = call("nvmlDeviceGetPcieReplayCounter", [&] { return L.pcie_replays(d.handle, &v); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) g.pcie_replay_total = v;
    }
    return true;
}

// The modes an administrator sets: persistence, compute mode, MIG.
bool read_modes(Shared& s, Device& d) {
    Caller call(s);
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    nvmlReturn_t rc;
    unsigned v = 0, pending = 0;
    g.persistence_mode.reset();
    if (L.persistence) {
        rc = call("nvmlDeviceGetPersistenceMode", [&] { return L.persistence(d.handle, &v); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) g.persistence_mode = v != 0;
    }
    g.compute_mode.reset();
    if (L.compute_mode) {
        rc = call("nvmlDeviceGetComputeMode", [&] { return L.compute_mode(d.handle, &v); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) {
            g.compute_mode = v == NVML_COMPUTEMODE_DEFAULT             ? ComputeMode::shared
                             : v == NVML_COMPUTEMODE_EXCLUSIVE_PROCESS ? ComputeMode::exclusive_process
                             : v == NVML_COMPUTEMODE_PROHIBITED        ? ComputeMode::prohibited
                                                                       : ComputeMode::exclusive_thread;
        }
    }
    g.mig_mode.reset();
    if (L.mig_mode) {
        rc = call("nvmlDeviceGetMigMode", [&] { return L.mig_mode(d.handle, &v, &pending); });
        if (is_lost(rc)) return false;
        if (rc == NVML_SUCCESS) g.mig_mode = v != 0;
    }
    return true;
}

// The fan and the video engines (NVENC, NVDEC).
bool read_fan_and_video(Shared& s, Device& d) {
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    const nvmlDevice_t h = d.handle;
    unsigned period = 0;
    return read_scaled(
               s, L.fan_speed, "nvmlDeviceGetFanSpeed", [&](unsigned* x) { return L.fan_speed(h, x); }, 1.0,
               g.fan_speed_percent) &&
           read_scaled(
               s, L.encoder_utilization, "nvmlDeviceGetEncoderUtilization",
               [&](unsigned* x) { return L.encoder_utilization(h, x, &period); }, 1.0, g.encoder_utilization_percent) &&
           read_scaled(
               s, L.decoder_utilization, "nvmlDeviceGetDecoderUtilization",
               [&](unsigned* x) { return L.decoder_utilization(h, x, &period); }, 1.0, g.decoder_utilization_percent);
}

// SM and tensor activity from GPM (Hopper and newer): a metric between this tick's sample and the
// previous one, so none on the first.
bool read_gpm(Shared& s, Device& d) {
    Caller call(s);
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    g.sm_activity_percent.reset();
    g.tensor_activity_percent.reset();
    if (!d.gpm_supported) return true;
    nvmlGpmSample_t cur = d.gpm_samples[d.gpm_current];
    const nvmlReturn_t rc = call("nvmlGpmSampleGet", [&] { return L.gpm_sample_get(d.handle, cur); });
    if (is_lost(rc)) return false;
    if (rc != NVML_SUCCESS) return true;
    if (d.gpm_have_previous) {
        nvmlGpmMetricsGet_t mg{};
        mg.version = 1;
        mg.numMetrics = 2;
        mg.sample1 = d.gpm_samples[1 - d.gpm_current];
        mg.sample2 = cur;
        mg.metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
        mg.metrics[1].metricId = NVML_GPM_METRIC_ANY_TENSOR_UTIL;
        if (call("nvmlGpmMetricsGet", [&] { return L.gpm_metrics_get(&mg); }) == NVML_SUCCESS) {
            if (mg.metrics[0].nvmlReturn == NVML_SUCCESS) g.sm_activity_percent = mg.metrics[0].value;
            if (mg.metrics[1].nvmlReturn == NVML_SUCCESS) g.tensor_activity_percent = mg.metrics[1].value;
        }
    }
    d.gpm_have_previous = true;
    d.gpm_current = 1 - d.gpm_current;
    return true;
}

// The GPU's compute and graphics processes, those of its MIG devices, and each one's SM share.
bool read_device_processes(Shared& s, Device& d) {
    Caller call(s);
    NvmlLibrary& L = s.lib;
    GpuInfo& g = d.info;
    g.processes.clear();
    if (s.process_buffer.empty()) s.process_buffer.resize(64 * 32);
    const std::uint64_t total = g.memory_total_bytes.value_or(0);
    if (L.compute_processes)
        read_processes(s, d.handle, total, L.compute_processes, L.process_symbol.c_str(), GpuProcessType::compute,
                       g.processes);
    if (L.graphics_processes)
        read_processes(s, d.handle, total, L.graphics_processes, "nvmlDeviceGetGraphicsRunningProcesses",
                       GpuProcessType::graphics, g.processes);
    if (!g.mig_mode.value_or(false))
        for (GpuProcess& p : g.processes) {  // outside MIG the instance fields mean nothing, whatever a driver wrote
            p.gpu_instance_id.reset();
            p.compute_instance_id.reset();
        }
    if (!read_mig_instances(s, d)) return false;
    if (!L.process_utilization || g.processes.empty()) return true;
    unsigned n = 0;
    nvmlReturn_t rc = call("nvmlDeviceGetProcessUtilization",
                           [&] { return L.process_utilization(d.handle, nullptr, &n, d.last_util_timestamp); });
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE && n > 0) {
        s.util_buffer.resize(n);
        rc = call("nvmlDeviceGetProcessUtilization",
                  [&] { return L.process_utilization(d.handle, s.util_buffer.data(), &n, d.last_util_timestamp); });
        if (rc == NVML_SUCCESS) {
            // Several samples per pid can come back: keep the newest.
            std::map<unsigned, std::pair<unsigned long long, unsigned>> newest;
            for (unsigned i = 0; i < n && i < s.util_buffer.size(); ++i) {
                const auto& smp = s.util_buffer[i];
                auto& slot = newest[smp.pid];
                if (smp.timeStamp >= slot.first) slot = {smp.timeStamp, smp.smUtil};
                d.last_util_timestamp = std::max(d.last_util_timestamp, smp.timeStamp);
            }
            for (auto& p : g.processes)
                if (auto it = newest.find(p.pid); it != newest.end()) p.sm_utilization_percent = it->second.second;
        }
    }
    return !is_lost(rc);
}

// A lost GPU stops every later call on it: its identity stays, its values go.
void mark_lost(Shared& s, Device& d) {
    GpuInfo& g = d.info;
    d.lost = true;
    GpuInfo id;
    id.index = g.index;
    id.uuid = g.uuid;
    id.name = g.name;
    id.pci_bus_id = g.pci_bus_id;
    id.minor_number = g.minor_number;
    id.error = s.lib.describe(NVML_ERROR_GPU_IS_LOST);
    id.lost = true;
    g = std::move(id);
}

void read_device(Shared& s, Device& d, double now) {
    if (d.lost) return;
    d.info.error.reset();
    d.info.stale = false;
    bool ok = read_utilization(s, d) && read_memory(s, d) && read_thermal_power_clocks(s, d) &&
              read_pcie_throughput(s, d, now) && read_counters(s, d) && read_modes(s, d) && read_fan_and_video(s, d);
    if (ok && now - d.slow_read_at >= s.options.pcie_interval_seconds) {
        d.slow_read_at = now;
        ok = read_slow(s, d);
    }
    ok = ok && read_nvlink_traffic(s, d, now) && read_gpm(s, d) && read_device_processes(s, d);
    if (!ok) mark_lost(s, d);
}

// The XIDs of one GPU, as the watch counted them; absent when the GPU is not watched.
void fill_xids(Shared& s, Device& d) {
    if (std::find(s.xid_devices.begin(), s.xid_devices.end(), d.handle) == s.xid_devices.end()) {
        d.info.xid_errors.reset();
        return;
    }
    std::vector<XidCount> v;
    {
        std::lock_guard lock(s.xid.m);
        for (const auto& [key, c] : s.xid.counts)
            if (key.first == d.handle) v.push_back(c);
    }
    d.info.xid_errors = std::move(v);  // the map's order: by XID
}

void collect(Shared& s, double now, GpuReading& out) {
    if (!s.attempted_init) initialize(s);
    // Copy-assign into the previous reading's storage: strings and vectors keep their
    // capacity, so a steady state allocates nothing.
    out.gpus.resize(s.devices.size());
    if (!s.init_failure.empty()) {
        out.state = s.init_state;
        out.status = s.init_failure;
        s.permanent_failure.store(true);
        return;
    }
    out.driver_version = s.driver_version;
    out.nvml_version = s.nvml_version;
    out.cuda_driver_version = s.cuda_driver_version;
    std::string failing;
    for (Device& d : s.devices) {
        read_device(s, d, now);
        fill_xids(s, d);  // after read_device: a GPU lost (XID 79) keeps its XIDs
        out.gpus[static_cast<std::size_t>(&d - s.devices.data())] = d.info;
        if (d.info.error)
            failing += (failing.empty() ? "" : "; ") + ("GPU" + std::to_string(d.info.index) + ": " + *d.info.error);
    }
    out.state = s.devices.empty() ? GpuState::no_gpus : failing.empty() ? GpuState::ok : GpuState::failing;
    out.status = s.devices.empty() ? "no NVIDIA GPU found" : failing.empty() ? "ok" : failing;
}

// Polls the event set (a wait of 0 ms) every 10 s (NvmlOptions::xid_poll_seconds) and drains what came (the driver
// queues events between polls), sleeping on our own condition variable in between: the backend's end stops it at once
// instead of after a driver wait. Every 10 s rather than every sample: each wake-up of a thread costs the agent about
// 0.1-0.3 ms of CPU (bench/fleet_overhead.py measured the 1 s poll at 0.03 % of a core, most of the fleet features'
// cost, and the 5 s poll still at 0.005-0.007 %), and an XID counted 10 s late changes no decision (Prometheus scrapes
// every 15 s; dcgm-exporter collects every 30 s).
void xid_main(std::shared_ptr<Shared> s) {
    name_this_thread("baton-xid");
    nvmlEventData_t data{};
    std::unique_lock lock(s->xid.m);
    while (!s->xid.stop) {
        lock.unlock();
        nvmlReturn_t rc = NVML_SUCCESS;
        // Drained in a loop, counted, never logged one by one: a storm of thousands a second costs a
        // map update each. Bounded per poll, so a driver that never says "no more" cannot spin us.
        for (int i = 0; i < 100000; ++i) {
            rc = s->lib.event_set_wait(s->xid_set, &data, 0);
            if (rc != NVML_SUCCESS) break;
            if (!(data.eventType & nvmlEventTypeXidCriticalError)) continue;
            std::lock_guard count_lock(s->xid.m);
            XidCount& c = s->xid.counts[{data.device, data.eventData}];
            c.xid = static_cast<unsigned>(std::min<unsigned long long>(data.eventData, 0xFFFFFFFFu));
            ++c.count;
            c.last_unix_ms = unix_millis();
        }
        lock.lock();
        // A failing wait (a driver reset under way) is tried again three polls later, not in a loop.
        const double poll = std::max(0.05, s->options.xid_poll_seconds);
        const auto pause =
            std::chrono::duration<double>(rc == NVML_SUCCESS || rc == NVML_ERROR_TIMEOUT ? poll : 3 * poll);
        s->xid.ended.wait_for(lock, pause, [&] { return s->xid.stop; });
    }
    s->xid.running = false;
    s->xid.ended.notify_all();
}

// On the worker, after the first tick: registers every GPU that gives XID events and starts the
// thread that waits for them. A driver without the event API, or GPUs without the event type,
// leave the XIDs unwatched (absent, not 0).
void start_xid_watch(const std::shared_ptr<Shared>& s) {
    s->xid_started = true;
    NvmlLibrary& L = s->lib;
    if (!s->init_failure.empty() || !L.event_set_create || !L.register_events || !L.event_set_wait) return;
    Caller call(*s);
    if (call("nvmlEventSetCreate", [&] { return L.event_set_create(&s->xid_set); }) != NVML_SUCCESS) return;
    for (Device& d : s->devices) {
        if (d.lost) continue;
        unsigned long long types = nvmlEventTypeXidCriticalError;
        if (L.supported_event_types && call("nvmlDeviceGetSupportedEventTypes",
                                            [&] { return L.supported_event_types(d.handle, &types); }) != NVML_SUCCESS)
            continue;
        if (!(types & nvmlEventTypeXidCriticalError)) continue;
        if (call("nvmlDeviceRegisterEvents", [&] {
                return L.register_events(d.handle, nvmlEventTypeXidCriticalError, s->xid_set);
            }) == NVML_SUCCESS)
            s->xid_devices.push_back(d.handle);
    }
    if (s->xid_devices.empty()) {
        // Nothing to watch (no GPU, or none gives the events): the set goes back at once.
        if (L.event_set_free) L.event_set_free(s->xid_set);
        s->xid_set = nullptr;
        return;
    }
    s->xid.running = true;
    s->xid_thread = std::thread(xid_main, s);
}

void worker_main(std::shared_ptr<Shared> s) {
    name_this_thread("baton-nvml");
    std::unique_lock lock(s->m);
    for (;;) {
        s->wake_worker.wait(lock, [&] { return s->request || s->quit; });
        if (s->quit) return;
        s->request = false;
        double now = s->request_now;
        lock.unlock();
        // `result` is the worker's while busy: the reader touches it only when !busy.
        collect(*s, now, s->result);
        if (!s->xid_started && s->options.xid_events) start_xid_watch(s);
        lock.lock();
        s->result_ready = true;
        s->busy = false;
        // Notify after unlocking, so the reader does not wake only to block on the mutex.
        lock.unlock();
        s->wake_reader.notify_all();
        lock.lock();
    }
}

class NvmlBackend final : public GpuBackend {
  public:
    explicit NvmlBackend(const NvmlOptions& o) : s_(std::make_shared<Shared>()) {
        s_->options = o;
        worker_ = std::thread(worker_main, s_);
    }

    ~NvmlBackend() override {
        {
            std::lock_guard lock(s_->m);
            s_->quit = true;
            s_->wake_worker.notify_all();
            if (s_->busy) {
                // Stuck inside the driver: leave the thread (and the library) behind; the
                // process ends with _exit (gpu_worker_abandoned). Joining would hang.
                worker_.detach();
                g_worker_abandoned.store(true);
                return;
            }
        }
        worker_.join();
        if (!stop_xid_watch()) return;
        // What NVML allocated for us goes back before it shuts down.
        if (s_->lib.gpm_sample_free)
            for (Device& d : s_->devices)
                for (nvmlGpmSample_t& g : d.gpm_samples)
                    if (g) {
                        s_->lib.gpm_sample_free(g);
                        g = nullptr;
                    }
        if (s_->lib.shutdown && s_->init_failure.empty()) s_->lib.shutdown();
    }

    void begin(double now) override {
        if (failed_for_good_) return;
        {
            std::lock_guard lock(s_->m);
            if (s_->busy) return;  // still stuck in an earlier call: end() reports it
            // A reading that came back after its tick's deadline is the newest good one: keep
            // it, or a tick that hangs next would show the values from before it (or none).
            take_result();
            if (failed_for_good_) return;
            s_->request = true;
            s_->busy = true;
            s_->request_now = now;
        }
        s_->wake_worker.notify_one();  // unlocked: the worker can take the mutex at once
    }

    const GpuReading& end() override {
        if (failed_for_good_) return last_good_;
        std::unique_lock lock(s_->m);
        const double deadline = s_->options.deadline_ms / 1000.0;
        for (;;) {
            // Short waits so an overrunning call is noticed within 20 ms of its deadline.
            if (s_->wake_reader.wait_for(lock, std::chrono::milliseconds(20), [&] { return !s_->busy; })) {
                take_result();
                return last_good_;
            }
            const char* c = s_->current_call.load();
            if (c && monotonic_seconds() - s_->call_started.load() > deadline) return stale();
        }
    }

  private:
    // Ends the XID thread (at once: it sleeps on xid.ended between polls) and frees the event set.
    // False when the thread is stuck in the driver: then it is left behind, as a stuck worker is.
    bool stop_xid_watch() {
        if (!s_->xid_thread.joinable()) return true;
        std::unique_lock lock(s_->xid.m);
        s_->xid.stop = true;
        s_->xid.ended.notify_all();
        const auto wait = std::chrono::milliseconds(s_->options.deadline_ms);
        if (!s_->xid.ended.wait_for(lock, wait, [&] { return !s_->xid.running; })) {
            s_->xid_thread.detach();
            g_worker_abandoned.store(true);
            return false;
        }
        lock.unlock();
        s_->xid_thread.join();
        if (s_->lib.event_set_free && s_->xid_set) s_->lib.event_set_free(s_->xid_set);
        return true;
    }

    // With s_->m held and the worker idle.
    void take_result() {
        if (!s_->result_ready) return;
        s_->result_ready = false;
        last_good_ = s_->result;  // copy-assign: both keep their capacity
        // No library or driver: this answer will not change, stop asking.
        failed_for_good_ = s_->permanent_failure.load();
    }

    const GpuReading& stale() {
        const char* c = s_->current_call.load();
        stale_ = last_good_;
        for (auto& g : stale_.gpus) g.stale = true;
        stale_.state = GpuState::stale;
        stale_.status = std::string("NVML call ") + (c ? c : "(unknown)") + " did not return within " +
                        std::to_string(s_->options.deadline_ms) + " ms; GPU values are stale";
        return stale_;
    }

    std::shared_ptr<Shared> s_;
    std::thread worker_;
    GpuReading last_good_, stale_;
    bool failed_for_good_ = false;
};

}  // namespace

std::unique_ptr<GpuBackend> make_nvml_backend(const NvmlOptions& options) {
    return std::make_unique<NvmlBackend>(options);
}

bool gpu_worker_abandoned() {
    return g_worker_abandoned.load();
}

void note_gpu_worker_abandoned() {
    g_worker_abandoned.store(true);
}

}  // namespace baton
