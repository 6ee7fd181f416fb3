#include "measure/h2d_bench.hpp"
#include "measure/pcie_link.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "measure/bench_math.hpp"
#include "measure/call_deadline.hpp"
#include "measure/contention.hpp"
#include "measure/cuda_library.hpp"
#include "core/clock.hpp"
#include "core/units.hpp"

namespace baton::measure {

namespace {

constexpr int kSampleLink = 1;  // the worker asks for a snapshot while it keeps the link busy

// The kinds of copy, in the table's column order.
enum Kind { h2d_pinned, h2d_pageable, d2h_pinned, d2h_pageable, d2d, kKinds };
const char* const kKindKeys[] = {"h2d_pinned_bytes_per_second", "h2d_pageable_bytes_per_second",
                                 "d2h_pinned_bytes_per_second", "d2h_pageable_bytes_per_second",
                                 "d2d_bytes_per_second"};
const char* const kKindHeads[] = {"h2d pinned", "h2d pageable", "d2h pinned", "d2h pageable", "d2d"};

struct DeviceRun {
    int cuda_index = 0;
    std::string name, bus_id;
    std::vector<std::uint64_t> sizes;
    std::vector<std::array<double, kKinds>> rates;  // per size
    std::array<double, kKinds> best{};
};

struct Measured {
    std::vector<DeviceRun> devices;
    int driver_version = 0;
};

// Everything the worker allocated on one device, released on every path out.
struct DeviceBuffers {
    const CudaLibrary* lib = nullptr;
    CUdevice dev = 0;
    bool retained = false;
    CUstream stream = nullptr;
    CUdeviceptr a = 0, b = 0;
    void* pinned = nullptr;
    void* pageable = nullptr;
    ~DeviceBuffers() {
        if (!lib) return;
        if (a) lib->mem_free(a);
        if (b) lib->mem_free(b);
        if (pinned) lib->mem_free_host(pinned);
        if (stream) lib->stream_destroy(stream);
        if (retained) lib->primary_ctx_release(dev);
        std::free(pageable);
    }
};

}  // namespace

std::string normal_bus_id(const std::string& id) {
    std::string s = id;
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::size_t colon = s.find(':');
    if (colon != std::string::npos && colon > 4) s = s.substr(colon - 4);  // an 8-digit domain: its last 4
    return s;
}

Result<BenchReport> run_h2d_bench(const H2dOptions& o) {
    // CUDA numbers devices fastest first unless told otherwise; baton numbers them in PCI order.
    ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
    ContentionWatch watch(o.sampler);
    watch.start();
    const std::vector<GpuInfo> before = watch.snapshot().gpus;
    std::string wanted_bus;  // --gpu N: the bus id NVML gives GPU N
    if (o.gpu >= 0) {
        for (const GpuInfo& g : before)
            if (static_cast<int>(g.index) == o.gpu) wanted_bus = normal_bus_id(g.pci_bus_id);
        if (wanted_bus.empty() && !before.empty())
            return make_error(fmt::format("no GPU {} (baton top lists the GPUs)", o.gpu));
    }
    // One per GPU, taken while the worker keeps that GPU's largest pinned copy going.
    std::vector<Snapshot> under_load;
    auto on_request = [&](int req) {
        if (req == kSampleLink) under_load.push_back(watch.finish());
    };
    std::shared_ptr<Measured> measured = std::make_shared<Measured>();
    auto work = [o, wanted_bus, measured](CallWatch& w) -> Result<BenchReport> {
        Result<CudaLibrary> loaded = load_cuda_library(o.library);
        if (!loaded.ok()) return loaded.error();
        const CudaLibrary& L = *loaded;
        auto failed = [&](CUresult rc, const std::string& what) {
            return make_error(fmt::format("{}: {}", what, L.describe(rc)));
        };
        CUresult rc = timed_call(w, "cuInit", L.init, 0u);
        if (rc != CUDA_SUCCESS) return failed(rc, "cuInit");
        timed_call(w, "cuDriverGetVersion", L.driver_version, &measured->driver_version);
        int count = 0;
        if ((rc = timed_call(w, "cuDeviceGetCount", L.device_count, &count)) != CUDA_SUCCESS)
            return failed(rc, "cuDeviceGetCount");
        std::vector<std::uint64_t> sizes;
        for (std::uint64_t s = o.min_size; s <= o.max_size; s *= 4) sizes.push_back(s);
        if (sizes.empty() || sizes.back() != o.max_size) sizes.push_back(o.max_size);
        for (int i = 0; i < count; ++i) {
            DeviceBuffers buf;
            buf.lib = &L;
            if ((rc = timed_call(w, "cuDeviceGet", L.device_get, &buf.dev, i)) != CUDA_SUCCESS)
                return failed(rc, "cuDeviceGet");
            char bus[32] = "", name[128] = "";
            timed_call(w, "cuDeviceGetPCIBusId", L.device_pci_bus_id, bus, static_cast<int>(sizeof bus), buf.dev);
            timed_call(w, "cuDeviceGetName", L.device_name, name, static_cast<int>(sizeof name), buf.dev);
            if (o.gpu >= 0 && (wanted_bus.empty() ? i != o.gpu : normal_bus_id(bus) != wanted_bus)) continue;
            const std::string where = fmt::format("CUDA device {} ({})", i, bus);
            CUcontext ctx = nullptr;
            if ((rc = timed_call(w, "cuDevicePrimaryCtxRetain", L.primary_ctx_retain, &ctx, buf.dev)) != CUDA_SUCCESS)
                return failed(rc, "cuDevicePrimaryCtxRetain on " + where);
            buf.retained = true;
            if ((rc = timed_call(w, "cuCtxSetCurrent", L.ctx_set_current, ctx)) != CUDA_SUCCESS)
                return failed(rc, "cuCtxSetCurrent on " + where);
            if ((rc = timed_call(w, "cuStreamCreate", L.stream_create, &buf.stream, 0u)) != CUDA_SUCCESS)
                return failed(rc, "cuStreamCreate on " + where);
            const std::size_t max = static_cast<std::size_t>(sizes.back());
            const std::string size_text = format_size(max);
            if ((rc = timed_call(w, "cuMemAlloc_v2", L.mem_alloc, &buf.a, max)) != CUDA_SUCCESS ||
                (rc = timed_call(w, "cuMemAlloc_v2", L.mem_alloc, &buf.b, max)) != CUDA_SUCCESS)
                return failed(rc, fmt::format("cuMemAlloc_v2 of {} on {}", size_text, where));
            if ((rc = timed_call(w, "cuMemAllocHost_v2", L.mem_alloc_host, &buf.pinned, max)) != CUDA_SUCCESS)
                return failed(rc, fmt::format("cuMemAllocHost_v2 of {} (pinned host memory)", size_text));
            buf.pageable = std::aligned_alloc(4096, (max + 4095) / 4096 * 4096);
            if (!buf.pageable) return make_error(fmt::format("cannot allocate {} of host memory", size_text));
            std::memset(buf.pinned, 1, max);  // touched: no page faults inside the timing
            std::memset(buf.pageable, 1, max);

            // One copy of `kind` and `size` on the stream.
            auto copy = [&](Kind kind, std::size_t size) -> CUresult {
                switch (kind) {
                    case h2d_pinned:
                        return timed_call(w, "cuMemcpyHtoDAsync_v2", L.memcpy_htod, buf.a, buf.pinned, size,
                                          buf.stream);
                    case h2d_pageable:
                        return timed_call(w, "cuMemcpyHtoDAsync_v2", L.memcpy_htod, buf.a, buf.pageable, size,
                                          buf.stream);
                    case d2h_pinned:
                        return timed_call(w, "cuMemcpyDtoHAsync_v2", L.memcpy_dtoh, buf.pinned, buf.a, size,
                                          buf.stream);
                    case d2h_pageable:
                        return timed_call(w, "cuMemcpyDtoHAsync_v2", L.memcpy_dtoh, buf.pageable, buf.a, size,
                                          buf.stream);
                    default:
                        return timed_call(w, "cuMemcpyDtoDAsync_v2", L.memcpy_dtod, buf.b, buf.a, size, buf.stream);
                }
            };
            DeviceRun run;
            run.cuda_index = i;
            run.name = name;
            run.bus_id = bus;
            run.sizes = sizes;
            for (std::uint64_t size64 : sizes) {
                const std::size_t size = static_cast<std::size_t>(size64);
                std::array<double, kKinds> row{};
                for (int k = 0; k < kKinds; ++k) {
                    const Kind kind = static_cast<Kind>(k);
                    const int reps = static_cast<int>(std::clamp<std::uint64_t>(o.bytes_per_point / size64, 3, 1000));
                    if ((rc = copy(kind, size)) != CUDA_SUCCESS ||  // warm-up
                        (rc = timed_call(w, "cuStreamSynchronize", L.stream_synchronize, buf.stream)) != CUDA_SUCCESS)
                        return failed(rc, fmt::format("{} copy of {} on {}", kKindHeads[k], format_size(size), where));
                    const double t0 = monotonic_seconds();
                    for (int r = 0; r < reps; ++r)
                        if ((rc = copy(kind, size)) != CUDA_SUCCESS)
                            return failed(rc,
                                          fmt::format("{} copy of {} on {}", kKindHeads[k], format_size(size), where));
                    if ((rc = timed_call(w, "cuStreamSynchronize", L.stream_synchronize, buf.stream)) != CUDA_SUCCESS)
                        return failed(rc, "cuStreamSynchronize on " + where);
                    const double seconds = std::max(monotonic_seconds() - t0, 1e-9);
                    // A device-to-device copy reads and writes device memory: both count, as in
                    // CUDA's bandwidthTest.
                    const double bytes = static_cast<double>(size) * reps * (kind == d2d ? 2 : 1);
                    row[k] = bytes / seconds;
                    run.best[k] = std::max(run.best[k], row[k]);
                }
                run.rates.push_back(row);
            }
            // Keep the link busy with the largest pinned copy until the waiting thread has read
            // NVML's link generation and width (a PCIe link may train down when idle).
            w.ask(kSampleLink);
            const double until = monotonic_seconds() + 5;
            while (!w.answered() && monotonic_seconds() < until) {
                if ((rc = copy(h2d_pinned, max)) != CUDA_SUCCESS ||
                    (rc = timed_call(w, "cuStreamSynchronize", L.stream_synchronize, buf.stream)) != CUDA_SUCCESS)
                    return failed(rc, "h2d pinned copy on " + where);
            }
            measured->devices.push_back(std::move(run));
        }
        if (measured->devices.empty())
            return make_error(o.gpu >= 0 ? fmt::format("CUDA does not see GPU {} (CUDA_VISIBLE_DEVICES?)", o.gpu)
                                         : "CUDA sees no GPU (CUDA_VISIBLE_DEVICES?)");
        return BenchReport{};
    };
    Result<BenchReport> done = run_with_deadline(work, o.deadline_seconds, on_request);
    if (!done.ok()) return done.error();

    BenchReport r;
    r.bench = "h2d";
    r.notes.push_back(fmt::format("CUDA driver API {}.{}; copies of {} to {}, x4 each step; GB = 1e9 bytes",
                                  measured->driver_version / 1000, measured->driver_version % 1000 / 10,
                                  format_size(o.min_size), format_size(o.max_size)));
    for (std::size_t di = 0; di < measured->devices.size(); ++di) {
        const DeviceRun& d = measured->devices[di];
        const Snapshot& busy = di < under_load.size() ? under_load[di] : watch.finish();
        const GpuInfo* g = nullptr;
        for (const GpuInfo& x : busy.gpus)
            if (normal_bus_id(x.pci_bus_id) == normal_bus_id(d.bus_id)) g = &x;
        const std::string label = g ? fmt::format("gpu{}", g->index) : fmt::format("cuda{}", d.cuda_index);
        Table t;
        t.title =
            fmt::format("{} {} ({}): copy bandwidth by size (GB/s; d2d counts read + write)", label, d.name, d.bus_id);
        t.keys = {"size_bytes"};
        t.headers = {"size"};
        for (int k = 0; k < kKinds; ++k) {
            t.keys.push_back(kKindKeys[k]);
            t.headers.push_back(kKindHeads[k]);
        }
        for (std::size_t i = 0; i < d.sizes.size(); ++i) {
            std::vector<Cell> row{number_cell(static_cast<double>(d.sizes[i]), format_size(d.sizes[i]))};
            for (int k = 0; k < kKinds; ++k)
                row.push_back(number_cell(d.rates[i][k], fmt::format("{:.2f}", d.rates[i][k] / 1e9)));
            t.rows.push_back(std::move(row));
        }
        r.tables.push_back(std::move(t));

        // The link's peak from NVML, read under load; and whether it trained below its maximum.
        // The ceiling is what the protocol lets through (line code and TLP overhead), not the raw rate.
        std::optional<double> peak;
        std::string source = "NVML does not report this GPU's PCIe link";
        std::string degraded;
        if (g && g->pcie_generation && g->pcie_width) {
            const LinkCeiling ceiling = gpu_pcie_ceiling(*g, false, o.sys_root);
            peak = ceiling.bytes_per_second;
            source = ceiling.source;
            if ((g->pcie_generation_max && *g->pcie_generation < *g->pcie_generation_max) ||
                (g->pcie_width_max && *g->pcie_width < *g->pcie_width_max)) {
                degraded = fmt::format(
                    "pcie_degraded: the link runs at PCIe {}.0 x{}, below its {}.0 x{}; reseat the "
                    "card or check the slot and BIOS",
                    *g->pcie_generation, *g->pcie_width, g->pcie_generation_max.value_or(*g->pcie_generation),
                    g->pcie_width_max.value_or(*g->pcie_width));
                r.notes.push_back(label + ": " + degraded);
            }
        }
        const std::string contention = g ? gpu_contention(busy, g->index, static_cast<std::uint32_t>(::getpid())) : "";
        for (const Kind k : {h2d_pinned, d2h_pinned}) {
            LinkResult l;
            l.link = fmt::format("{} {}", k == h2d_pinned ? "h2d" : "d2h", label) + " pinned";
            l.measured = d.best[k];
            l.peak = peak;
            l.peak_source = source;
            l.ok_share = o.ok_share;
            l.verdict = link_verdict(l.share(), o.ok_share, contention);
            if (l.verdict == "saturated") l.detail = contention;
            if (!degraded.empty()) l.detail = degraded + (l.detail.empty() ? "" : "; " + l.detail);
            r.links.push_back(std::move(l));
        }
        LinkResult pageable;
        pageable.link = "h2d " + label + " pageable";
        pageable.measured = d.best[h2d_pageable];
        pageable.peak_source = "judged by the pinned copies";
        pageable.verdict = "measured";
        if (d.best[h2d_pinned] > 0 && pageable.measured < 0.6 * d.best[h2d_pinned])
            pageable.detail = fmt::format(
                "{:.0f} % of pinned: pageable copies go through a bounce buffer; "
                "DataLoader(pin_memory=True) copies from pinned memory",
                100 * pageable.measured / d.best[h2d_pinned]);
        r.links.push_back(std::move(pageable));
        LinkResult dd;
        dd.link = "d2d " + label;
        dd.measured = d.best[d2d];
        dd.peak_source = "GPU memory: no peak from NVML";
        dd.verdict = "measured";
        r.links.push_back(std::move(dd));
    }
    return r;
}

}  // namespace baton::measure
