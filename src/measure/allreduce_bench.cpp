#include "measure/allreduce_bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "measure/call_deadline.hpp"
#include "measure/contention.hpp"
#include "measure/cuda_library.hpp"
#include "measure/gpu_topology.hpp"
#include "measure/pcie_link.hpp"
#include "core/clock.hpp"
#include "core/units.hpp"

namespace baton::measure {

namespace {

struct Point {
    std::uint64_t bytes = 0, count = 0;
    CollectiveFigures out_of_place, in_place;
};

struct Measured {
    GpuTopology topology;
    int nccl_version = 0;
    std::string nccl_path;
    std::vector<std::string> names;
    std::vector<Point> points;
};

// One device's context, stream and buffers, released on every path out.
struct Rank {
    const CudaLibrary* lib = nullptr;
    CUdevice dev = 0;
    bool retained = false;
    CUcontext ctx = nullptr;
    CUstream stream = nullptr;
    CUdeviceptr send = 0, recv = 0;
    ~Rank() {
        if (!lib) return;
        if (ctx) lib->ctx_set_current(ctx);
        if (send) lib->mem_free(send);
        if (recv) lib->mem_free(recv);
        if (stream) lib->stream_destroy(stream);
        if (retained) lib->primary_ctx_release(dev);
    }
};

}  // namespace

Result<BenchReport> run_allreduce_bench(const AllreduceOptions& o) {
    ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);  // CUDA's numbering = NVML's = baton's
    ContentionWatch watch(o.sampler);
    watch.start();
    auto measured = std::make_shared<Measured>();
    auto work = [o, measured](CallWatch& w) -> Result<BenchReport> {
        Result<CudaLibrary> cuda = load_cuda_library(o.cuda_library);
        if (!cuda.ok()) return cuda.error();
        Result<NcclLibrary> nccl = load_nccl_library(o.nccl_library, o.python);
        if (!nccl.ok()) return nccl.error();
        const CudaLibrary& C = *cuda;
        const NcclLibrary& N = *nccl;
        measured->nccl_path = N.path;
        timed_call(w, "ncclGetVersion", N.get_version, &measured->nccl_version);
        CUresult rc = timed_call(w, "cuInit", C.init, 0u);
        if (rc != CUDA_SUCCESS) return make_error("cuInit: " + C.describe(rc));
        int count = 0;
        if ((rc = timed_call(w, "cuDeviceGetCount", C.device_count, &count)) != CUDA_SUCCESS)
            return make_error("cuDeviceGetCount: " + C.describe(rc));
        const int n = o.gpus > 0 ? o.gpus : count;
        if (n > count) return make_error(fmt::format("--gpus {}: CUDA sees {} GPU(s)", n, count));
        if (n < 2)
            return make_error(fmt::format("{} GPU: a collective needs 2 or more (bench h2d measures one GPU)", n));
        measured->topology = read_gpu_topology(o.nvml_library, w);

        // nccl-tests' sizes: the whole buffer ("size"); the count each rank passes follows from it.
        std::vector<std::uint64_t> sizes;
        const std::uint64_t unit = (o.op == Collective::all_gather || o.op == Collective::reduce_scatter)
                                       ? 4ull * static_cast<std::uint64_t>(n)
                                       : 4;
        for (std::uint64_t s = o.min_bytes; s <= o.max_bytes; s *= 4)
            if (s / unit * unit > 0 && (sizes.empty() || sizes.back() != s / unit * unit))
                sizes.push_back(s / unit * unit);
        if (sizes.empty()) return make_error("no size to measure: --max-bytes is below one element per GPU");
        const std::size_t buffer = static_cast<std::size_t>(sizes.back());

        std::vector<std::unique_ptr<Rank>> ranks;
        std::vector<int> devlist;
        for (int i = 0; i < n; ++i) {
            auto r = std::make_unique<Rank>();
            r->lib = &C;
            const std::string where = fmt::format("CUDA device {}", i);
            if ((rc = timed_call(w, "cuDeviceGet", C.device_get, &r->dev, i)) != CUDA_SUCCESS)
                return make_error("cuDeviceGet: " + C.describe(rc));
            char name[128] = "";
            timed_call(w, "cuDeviceGetName", C.device_name, name, static_cast<int>(sizeof name), r->dev);
            measured->names.push_back(name);
            if ((rc = timed_call(w, "cuDevicePrimaryCtxRetain", C.primary_ctx_retain, &r->ctx, r->dev)) != CUDA_SUCCESS)
                return make_error(fmt::format("cuDevicePrimaryCtxRetain on {}: {}", where, C.describe(rc)));
            r->retained = true;
            if ((rc = timed_call(w, "cuCtxSetCurrent", C.ctx_set_current, r->ctx)) != CUDA_SUCCESS ||
                (rc = timed_call(w, "cuStreamCreate", C.stream_create, &r->stream, 0u)) != CUDA_SUCCESS)
                return make_error(fmt::format("cuStreamCreate on {}: {}", where, C.describe(rc)));
            if ((rc = timed_call(w, "cuMemAlloc_v2", C.mem_alloc, &r->send, buffer)) != CUDA_SUCCESS ||
                (rc = timed_call(w, "cuMemAlloc_v2", C.mem_alloc, &r->recv, buffer)) != CUDA_SUCCESS)
                return make_error(
                    fmt::format("cuMemAlloc_v2 of 2 x {} on {}: {}", format_size(buffer), where, C.describe(rc)));
            devlist.push_back(i);
            ranks.push_back(std::move(r));
        }
        std::vector<ncclComm_t> comms(static_cast<std::size_t>(n), nullptr);
        if (ncclResult_t nr = timed_call(w, "ncclCommInitAll", N.comm_init_all, comms.data(), n, devlist.data());
            nr != 0)
            return make_error("ncclCommInitAll: " + N.describe(nr));
        struct Comms {
            const NcclLibrary* lib;
            std::vector<ncclComm_t>* comms;
            ~Comms() {
                for (ncclComm_t c : *comms)
                    if (c) lib->comm_destroy(c);
            }
        } destroy{&N, &comms};

        // One collective on every rank (inside a group: one thread drives every GPU), then wait.
        auto once = [&](std::uint64_t bytes, bool in_place) -> std::string {
            const std::size_t per_rank = static_cast<std::size_t>(bytes / unit);  // elements each rank passes
            if (ncclResult_t nr = timed_call(w, "ncclGroupStart", N.group_start); nr != 0)
                return "ncclGroupStart: " + N.describe(nr);
            for (int i = 0; i < n; ++i) {
                Rank& r = *ranks[static_cast<std::size_t>(i)];
                auto* send = reinterpret_cast<char*>(r.send);
                auto* recv = reinterpret_cast<char*>(r.recv);
                const std::size_t slice = per_rank * 4 * static_cast<std::size_t>(i);
                ncclResult_t nr = 0;
                switch (o.op) {
                    case Collective::all_reduce:
                        nr = timed_call(w, "ncclAllReduce", N.all_reduce, send, in_place ? send : recv, per_rank,
                                        ncclFloat32, ncclSum, comms[static_cast<std::size_t>(i)], r.stream);
                        break;
                    case Collective::all_gather:  // in place: each rank's part sits at its slot of the output
                        nr = timed_call(w, "ncclAllGather", N.all_gather, in_place ? recv + slice : send, recv,
                                        per_rank, ncclFloat32, comms[static_cast<std::size_t>(i)], r.stream);
                        break;
                    case Collective::reduce_scatter:  // in place: the output is the rank's slot of the input
                        nr = timed_call(w, "ncclReduceScatter", N.reduce_scatter, send, in_place ? send + slice : recv,
                                        per_rank, ncclFloat32, ncclSum, comms[static_cast<std::size_t>(i)], r.stream);
                        break;
                    case Collective::broadcast:
                        nr = timed_call(w, "ncclBroadcast", N.broadcast, send, in_place ? send : recv, per_rank,
                                        ncclFloat32, 0, comms[static_cast<std::size_t>(i)], r.stream);
                        break;
                }
                if (nr != 0) return fmt::format("{} on rank {}: {}", collective_name(o.op), i, N.describe(nr));
            }
            if (ncclResult_t nr = timed_call(w, "ncclGroupEnd", N.group_end); nr != 0)
                return "ncclGroupEnd: " + N.describe(nr);
            return "";
        };
        auto sync = [&]() -> std::string {
            for (auto& r : ranks) {
                timed_call(w, "cuCtxSetCurrent", C.ctx_set_current, r->ctx);
                if (CUresult s = timed_call(w, "cuStreamSynchronize", C.stream_synchronize, r->stream);
                    s != CUDA_SUCCESS)
                    return "cuStreamSynchronize: " + C.describe(s);
            }
            return "";
        };
        for (std::uint64_t bytes : sizes) {
            Point p;
            p.bytes = bytes;
            p.count = bytes / 4;
            for (bool in_place : {false, true}) {
                for (int i = 0; i < o.warmup; ++i)
                    if (std::string e = once(bytes, in_place); !e.empty()) return make_error(e);
                if (std::string e = sync(); !e.empty()) return make_error(e);
                const double t0 = monotonic_seconds();
                for (int i = 0; i < o.iters; ++i)
                    if (std::string e = once(bytes, in_place); !e.empty()) return make_error(e);
                if (std::string e = sync(); !e.empty()) return make_error(e);
                const double seconds = (monotonic_seconds() - t0) / o.iters;
                (in_place ? p.in_place : p.out_of_place) =
                    collective_figures(o.op, n, static_cast<double>(bytes), seconds);
            }
            measured->points.push_back(p);
        }
        return BenchReport{};
    };
    Result<BenchReport> done = run_with_deadline(work, o.deadline_seconds);
    if (!done.ok()) return done.error();
    const Snapshot& after = watch.finish();

    const int n = static_cast<int>(measured->names.size());
    BenchReport r;
    r.bench = "allreduce";
    r.notes.push_back(fmt::format(
        "NCCL {}.{}.{} ({}), {} GPUs in one process (ncclCommInitAll), float32{}, "
        "{} warm-up and {} timed iterations; GB = 1e9 bytes",
        measured->nccl_version / 10000, measured->nccl_version / 100 % 100, measured->nccl_version % 100,
        measured->nccl_path, n, o.op == Collective::all_reduce || o.op == Collective::reduce_scatter ? ", sum" : "",
        o.warmup, o.iters));
    std::string topology = topology_text(measured->topology);
    while (!topology.empty() && topology.back() == '\n') topology.pop_back();  // a note is a line (or several)
    r.notes.push_back(topology);
    Table t;
    t.title = fmt::format("{}: nccl-tests' columns (time in us, algbw and busbw in GB/s; busbw = algbw x {:.3g})",
                          collective_name(o.op), bus_factor(o.op, n));
    t.keys = {"size_bytes",
              "count",
              "type",
              "redop",
              "root",
              "time_us",
              "algbw_gbps",
              "busbw_gbps",
              "in_place_time_us",
              "in_place_algbw_gbps",
              "in_place_busbw_gbps"};
    t.headers = {"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "time", "algbw", "busbw"};
    t.align = "rrrrrrrrrrr";  // as nccl-tests prints them
    const bool reduces = o.op == Collective::all_reduce || o.op == Collective::reduce_scatter;
    double best_busbw = 0, sum_busbw = 0;
    for (const Point& p : measured->points) {
        auto fig = [](const CollectiveFigures& f) {
            return std::vector<Cell>{number_cell(f.time_us, fmt::format("{:.1f}", f.time_us)),
                                     number_cell(f.algbw_gbps, fmt::format("{:.2f}", f.algbw_gbps)),
                                     number_cell(f.busbw_gbps, fmt::format("{:.2f}", f.busbw_gbps))};
        };
        std::vector<Cell> row{
            number_cell(static_cast<double>(p.bytes), std::to_string(p.bytes)),
            number_cell(static_cast<double>(p.count), std::to_string(p.count)), text_cell("float"),
            text_cell(reduces ? "sum" : "none"),
            number_cell(o.op == Collective::broadcast ? 0 : -1, o.op == Collective::broadcast ? "0" : "-1")};
        for (Cell& c : fig(p.out_of_place)) row.push_back(std::move(c));
        for (Cell& c : fig(p.in_place)) row.push_back(std::move(c));
        t.rows.push_back(std::move(row));
        best_busbw = std::max({best_busbw, p.out_of_place.busbw_gbps, p.in_place.busbw_gbps});
        sum_busbw += p.out_of_place.busbw_gbps + p.in_place.busbw_gbps;
    }
    r.tables.push_back(std::move(t));
    const double avg = measured->points.empty() ? 0 : sum_busbw / (2.0 * static_cast<double>(measured->points.size()));
    r.footnotes.push_back(fmt::format("# Avg bus bandwidth    : {:.4g} (GB/s, as nccl-tests prints it)", avg));

    LinkResult l;
    l.link = fmt::format("nccl {} {} GPUs", collective_name(o.op), n);
    l.measured = best_busbw * 1e9;
    l.ok_share = o.ok_share;
    if (measured->topology.any_nvlink()) {
        l.peak_source = "NVLink: NVML gives no dependable NVLink rate; compare busbw with nccl-tests on this model";
    } else if (!measured->topology.error.empty()) {
        l.peak_source = "topology unknown: " + measured->topology.error;
    } else {
        // PCIe only: a ring's busbw cannot pass the slowest GPU's link, one direction.
        std::optional<double> slowest;
        std::string which;
        for (const GpuInfo& g : after.gpus) {
            if (static_cast<int>(g.index) >= n || !g.pcie_generation_max || !g.pcie_width_max) continue;
            const LinkCeiling link = gpu_pcie_ceiling(g, true, o.sys_root);
            if (link.bytes_per_second && (!slowest || *link.bytes_per_second < *slowest)) {
                slowest = link.bytes_per_second;
                which = fmt::format("GPU {}'s link, the slowest of the ring: {}", g.index, link.source);
            }
        }
        l.peak = slowest;
        l.peak_source = slowest ? which : "NVML reports no PCIe link for these GPUs";
        if (slowest && l.measured > 1.1 * *slowest) {  // faster than PCIe can carry: another fabric
            l.peak.reset();
            l.peak_source =
                "busbw above the PCIe link: the GPUs talk over NVLink or NVSwitch, which NVML did not "
                "report";
        }
    }
    std::string contention;
    for (int i = 0; i < n && contention.empty(); ++i)
        contention = gpu_contention(after, static_cast<unsigned>(i), static_cast<std::uint32_t>(::getpid()));
    l.verdict = link_verdict(l.share(), o.ok_share, contention);
    if (l.verdict == "saturated") l.detail = contention;
    r.links.push_back(std::move(l));
    return r;
}

}  // namespace baton::measure
