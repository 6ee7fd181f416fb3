#include "profile/step_breakdown.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "core/text_parse.hpp"
#include "profile/sync_cost.hpp"
#include "profile/time_partition.hpp"

namespace baton::profile {

namespace {

// A gap shorter than this before an activity that had already been launched is the GPU moving on
// to the next queued item (back-to-back kernels), not a wait on something else.
constexpr double kQueuedGapUs = 10;

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

bool is_step_mark(const Trace& t, const TraceEvent& e) {
    return e.category == Category::user_annotation && starts_with(t.name_of(e), "ProfilerStep#");
}

bool is_gpu(const TraceEvent& e) {
    return e.category == Category::kernel || e.category == Category::gpu_memcpy || e.category == Category::gpu_memset;
}

bool is_host(const TraceEvent& e) {
    return e.category == Category::cpu_op || e.category == Category::user_annotation ||
           e.category == Category::python_function || e.category == Category::cuda_runtime ||
           e.category == Category::cuda_driver;
}

bool is_op(const TraceEvent& e) {
    return e.category == Category::cpu_op || e.category == Category::user_annotation;
}

int device_of(const TraceEvent& e) {
    if (e.device >= 0) return e.device;
    return e.pid >= 0 && e.pid < 1024 ? static_cast<int>(e.pid) : 0;
}

// Calls in which the host waits for the GPU: the runtime's and the driver's synchronising calls
// and the synchronous copies (their Async siblings do not wait for the GPU), CUDA's and HIP's
// (hipMemcpyWithStream is synchronous: PyTorch's ROCm build copies a tensor to the host with it).
bool is_sync_call(std::string_view n) {
    static constexpr std::string_view calls[] = {
        "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
        "cudaMemcpy2D",          "cudaMemcpyToSymbol",    "cudaMemcpyFromSymbol", "cuStreamSynchronize",
        "cuCtxSynchronize",      "cuEventSynchronize",    "cuMemcpyDtoH_v2",      "cuMemcpyHtoD_v2",
        "hipStreamSynchronize",  "hipDeviceSynchronize",  "hipEventSynchronize",  "hipMemcpy",
        "hipMemcpy2D",           "hipMemcpyWithStream",   "hipMemcpyDtoH",        "hipMemcpyHtoD",
        "hipMemcpyToSymbol",     "hipMemcpyFromSymbol",   "hipCtxSynchronize"};
    return std::find(std::begin(calls), std::end(calls), n) != std::end(calls);
}

// The operator behind .item(), .tolist(), bool(t), int(t): on a GPU tensor it waits for the GPU.
bool is_scalar_read(std::string_view n) {
    return n == "aten::_local_scalar_dense";
}

// An operator that always runs inside another: the legacy profiler's whole microseconds can put its
// start at its caller's end (aten::item 17867+2, aten::_local_scalar_dense 17869+1), which reads as
// a sibling unless the pair is known.
bool always_called_by(std::string_view callee, std::string_view caller) {
    static constexpr std::pair<std::string_view, std::string_view> pairs[] = {
        {"aten::_local_scalar_dense", "aten::item"},
        {"aten::item", "aten::is_nonzero"},
    };
    for (const auto& [inner, outer] : pairs)
        if (inner == callee && outer == caller) return true;
    return false;
}

enum class OpRole { none, data, optimizer, backward, to_device };

OpRole op_role(std::string_view n) {
    // enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, ..._MultiProcessingDataLoaderIter...
    if (n.find("DataLoader") != std::string_view::npos && ends_with(n, "__next__")) return OpRole::data;
    if (starts_with(n, "Optimizer.step#") || starts_with(n, "Optimizer.zero_grad#")) return OpRole::optimizer;
    if (starts_with(n, "autograd::engine::evaluate_function")) return OpRole::backward;
    if (n == "aten::to" || n == "aten::_to_copy" || n == "aten::copy_") return OpRole::to_device;
    return OpRole::none;
}

std::int64_t step_number(std::string_view n) {
    return text::parse_digits<std::int64_t>(n.substr(std::string_view("ProfilerStep#").size())).value_or(-1);
}

// The host events of one thread nested: each event's parent (any category) and nearest operator
// ancestor, by start time (an event starting inside another is its child, even when rounding lets
// it end a microsecond later).
struct Nesting {
    std::vector<std::int64_t> parent, op_parent;  // by event index, -1: none
};

Nesting nest(const Trace& t) {
    const std::vector<TraceEvent>& ev = t.events;
    Nesting n{std::vector<std::int64_t>(ev.size(), -1), std::vector<std::int64_t>(ev.size(), -1)};
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < ev.size(); ++i)
        if (is_host(ev[i]) && !is_step_mark(t, ev[i])) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const TraceEvent &x = ev[a], &y = ev[b];
        if (x.pid != y.pid) return x.pid < y.pid;
        if (x.tid != y.tid) return x.tid < y.tid;
        if (x.ts_us != y.ts_us) return x.ts_us < y.ts_us;
        if (x.dur_us != y.dur_us) return x.dur_us > y.dur_us;
        return a < b;  // the same span: the one written first (the profiler writes a parent first) holds
    });
    std::vector<std::size_t> open;
    for (std::size_t k = 0; k < order.size(); ++k) {
        const std::size_t i = order[k];
        const TraceEvent& e = ev[i];
        if (k > 0 && (ev[order[k - 1]].pid != e.pid || ev[order[k - 1]].tid != e.tid)) open.clear();
        // An event starting where another ended is not its child; one starting with a parent of no
        // duration (the legacy profiler's microseconds round many to 0) is, and so is a known callee.
        while (!open.empty()) {
            const TraceEvent& top = ev[open.back()];
            const double end = top.ts_us + top.dur_us;
            if (end > e.ts_us || (end == e.ts_us && top.ts_us == e.ts_us)) break;
            if (end == e.ts_us && always_called_by(t.name_of(e), t.name_of(top))) break;
            open.pop_back();
        }
        if (!open.empty()) {
            n.parent[i] = static_cast<std::int64_t>(open.back());
            for (auto it = open.rbegin(); it != open.rend(); ++it)
                if (is_op(ev[*it])) {
                    n.op_parent[i] = static_cast<std::int64_t>(*it);
                    break;
                }
        }
        open.push_back(i);
    }
    return n;
}

// The first user frame of a "Call stack" string (innermost first, ';'-separated).
std::string user_frame_of_stack(std::string_view stack) {
    while (!stack.empty()) {
        const std::size_t semi = stack.find(';');
        std::string_view frame = stack.substr(0, semi);
        while (!frame.empty() && frame.front() == ' ') frame.remove_prefix(1);
        if (is_user_frame(frame)) return std::string(frame);
        if (semi == std::string_view::npos) break;
        stack.remove_prefix(semi + 1);
    }
    return "";
}

// The steps: the "ProfilerStep#N" marks of the first thread that has them, each ending where the next
// begins at the latest; without marks, the whole trace as one.
std::vector<Step> find_steps(const Trace& t, std::int64_t& step_pid, std::int64_t& step_tid) {
    std::vector<const TraceEvent*> marks;
    for (const TraceEvent& e : t.events)
        if (is_step_mark(t, e)) {
            if (marks.empty()) step_pid = e.pid, step_tid = e.tid;
            if (e.pid == step_pid && e.tid == step_tid) marks.push_back(&e);
        }
    std::sort(marks.begin(), marks.end(), [](const TraceEvent* a, const TraceEvent* b) { return a->ts_us < b->ts_us; });
    std::vector<Step> steps;
    for (std::size_t i = 0; i < marks.size(); ++i) {
        Step s;
        s.number = step_number(t.name_of(*marks[i]));
        s.start_us = marks[i]->ts_us;
        double end = marks[i]->ts_us + marks[i]->dur_us;
        if (i + 1 < marks.size()) end = std::min(end, marks[i + 1]->ts_us);
        s.dur_us = std::max(0.0, end - s.start_us);
        steps.push_back(s);
    }
    if (!steps.empty()) return steps;
    double lo = 0, hi = 0;
    bool any = false;
    for (const TraceEvent& e : t.events) {
        lo = any ? std::min(lo, e.ts_us) : e.ts_us;
        hi = any ? std::max(hi, e.ts_us + e.dur_us) : e.ts_us + e.dur_us;
        any = true;
    }
    if (any) steps.push_back({-1, lo, hi - lo, {}, {}});
    // The step thread without marks: the thread with the most operator time.
    std::map<std::pair<std::int64_t, std::int64_t>, double> busy;
    for (const TraceEvent& e : t.events)
        if (e.category == Category::cpu_op) busy[{e.pid, e.tid}] += e.dur_us;
    double most = -1;
    for (const auto& [key, us] : busy)
        if (us > most) most = us, step_pid = key.first, step_tid = key.second;
    return steps;
}

// Which step an instant falls in, or -1.
std::int64_t step_at(const std::vector<Step>& steps, double t) {
    auto it = std::upper_bound(steps.begin(), steps.end(), t, [](double x, const Step& s) { return x < s.start_us; });
    if (it == steps.begin()) return -1;
    --it;
    return t < it->start_us + it->dur_us || (it->dur_us == 0 && t == it->start_us) ? it - steps.begin() : -1;
}

// One GPU's activities over the window: its partition with the idle time split, and its events by start.
struct DeviceTimeline {
    std::vector<Piece> pieces;       // labels are GpuSlice values
    std::vector<Piece> comm_pieces;  // label 0: a communication kernel ran
    std::vector<const TraceEvent*> events;
    std::vector<int> slices;  // each event's GpuSlice, as `events`
};

std::string fmt_lane(int device, std::int64_t stream) {
    return "GPU" + std::to_string(device) + (stream >= 0 ? " stream " + std::to_string(stream) : std::string());
}

// An activity's slice. A kernel's class is found once per distinct name (a trace repeats a few
// hundred names a million times), not once per launch.
class Slices {
  public:
    explicit Slices(const Trace& t) : t_(t), kernel_slice_(t.names.size(), -1) {}
    int of(const TraceEvent& e) {
        if (e.category == Category::gpu_memset) return static_cast<int>(GpuSlice::memset);
        if (e.category == Category::gpu_memcpy) {
            switch (copy_of(t_.name_of(e)).kind) {
                case CopyKind::h2d:
                    return static_cast<int>(GpuSlice::memcpy_h2d);
                case CopyKind::d2h:
                    return static_cast<int>(GpuSlice::memcpy_d2h);
                default:
                    return static_cast<int>(GpuSlice::memcpy_d2d);
            }
        }
        int& s = kernel_slice_[e.name];
        if (s < 0) s = of_class(kernel_class(t_.name_of(e)));
        return s;
    }

  private:
    static int of_class(KernelClass kind) {
        switch (kind) {
            case KernelClass::gemm:
                return static_cast<int>(GpuSlice::gemm);
            case KernelClass::conv:
                return static_cast<int>(GpuSlice::conv);
            case KernelClass::attention:
                return static_cast<int>(GpuSlice::attention);
            case KernelClass::elementwise:
                return static_cast<int>(GpuSlice::elementwise);
            case KernelClass::reduction:
                return static_cast<int>(GpuSlice::reduction);
            case KernelClass::communication:
                return static_cast<int>(GpuSlice::communication);
            case KernelClass::other:
                break;
        }
        return static_cast<int>(GpuSlice::other_kernel);
    }
    const Trace& t_;
    std::vector<int> kernel_slice_;  // by interned name, -1: not classified yet
};

DeviceTimeline device_timeline(Slices& slices, std::vector<const TraceEvent*> events, double from, double to,
                               const std::unordered_map<std::int64_t, double>& launch_at) {
    DeviceTimeline d;
    std::sort(events.begin(), events.end(),
              [](const TraceEvent* a, const TraceEvent* b) { return a->ts_us < b->ts_us; });
    std::vector<Span> spans, comm;
    for (const TraceEvent* e : events) {
        const int slice = slices.of(*e);
        d.slices.push_back(slice);
        spans.push_back({e->ts_us, e->ts_us + e->dur_us, slice});
        if (slice == static_cast<int>(GpuSlice::communication)) comm.push_back({e->ts_us, e->ts_us + e->dur_us, 0});
    }
    d.comm_pieces = partition(comm, from, to);
    for (const Piece& p : partition(spans, from, to)) {
        if (p.label >= 0) {
            d.pieces.push_back(p);
            continue;
        }
        // Why the GPU idled: when the next activity (the first to start at or after the gap's end)
        // was launched.
        auto next = std::lower_bound(events.begin(), events.end(), p.end - 1e-6,
                                     [](const TraceEvent* e, double x) { return e->ts_us < x; });
        const auto host_wait = static_cast<int>(GpuSlice::idle_host_wait);
        const auto launch_gap = static_cast<int>(GpuSlice::idle_launch_gap);
        const auto other = static_cast<int>(GpuSlice::idle_other);
        if (next == events.end()) {
            d.pieces.push_back({p.start, p.end, host_wait});  // nothing more was launched in the trace
            continue;
        }
        const auto launch = launch_at.find((*next)->correlation);
        if ((*next)->correlation < 0 || launch == launch_at.end()) {
            d.pieces.push_back({p.start, p.end, other});
        } else if (launch->second >= p.start) {
            const double l = std::min(launch->second, p.end);
            d.pieces.push_back({p.start, l, host_wait});
            if (p.end > l) d.pieces.push_back({l, p.end, launch_gap});
        } else {
            const bool queued_back_to_back = (*next)->ts_us - p.start < kQueuedGapUs;
            d.pieces.push_back({p.start, p.end, queued_back_to_back ? launch_gap : other});
        }
    }
    d.events = std::move(events);
    return d;
}

double covered(const std::vector<Piece>& pieces, double from, double to) {
    std::vector<double> one(1, 0.0);
    add_clipped(pieces, from, to, one);
    return one[0];
}

void analyse_gpus(const Trace& t, Analysis& a, std::vector<DeviceTimeline>& timelines) {
    std::unordered_map<std::int64_t, double> launch_at;  // correlation -> the launching call's start
    std::map<int, std::vector<const TraceEvent*>> by_device;
    for (const TraceEvent& e : t.events) {
        if ((e.category == Category::cuda_runtime || e.category == Category::cuda_driver) && e.correlation >= 0)
            launch_at.emplace(e.correlation, e.ts_us);
        if (is_gpu(e)) by_device[device_of(e)].push_back(&e);
    }
    a.has_gpu = !by_device.empty();
    if (a.steps.empty()) return;
    const double from = a.steps.front().start_us, to = a.steps.back().start_us + a.steps.back().dur_us;
    Slices slices(t);
    for (auto& [device, events] : by_device) {
        a.devices.push_back(device);
        timelines.push_back(device_timeline(slices, std::move(events), from, to, launch_at));
    }
    for (Step& s : a.steps) {
        for (std::size_t d = 0; d < a.devices.size(); ++d) {
            GpuStep g;
            g.device = a.devices[d];
            std::vector<double> by(kGpuSlices, 0.0);
            add_clipped(timelines[d].pieces, s.start_us, s.start_us + s.dur_us, by);
            std::copy(by.begin(), by.end(), g.us.begin());
            g.comm_us = covered(timelines[d].comm_pieces, s.start_us, s.start_us + s.dur_us);
            g.comm_hidden_us = std::max(0.0, g.comm_us - g.us[static_cast<std::size_t>(GpuSlice::communication)]);
            s.gpus.push_back(g);
        }
    }
    // The operators' input types by External id (a kernel names its operator's).
    std::unordered_map<std::int64_t, std::uint32_t> op_input_type;
    for (const TraceEvent& e : t.events)
        if (e.category == Category::cpu_op && e.external_id >= 0 && e.input_type != TraceEvent::kNoStack)
            op_input_type.emplace(e.external_id, e.input_type);
    // Counts and sums by the step an activity started in.
    std::map<std::uint32_t, TopKernel> kernels;                           // by interned name
    std::vector<std::vector<double>> kernel_durations(a.devices.size());  // for each GPU's median
    for (std::size_t d = 0; d < a.devices.size(); ++d)
        for (const TraceEvent* e : timelines[d].events) {
            const std::int64_t si = step_at(a.steps, e->ts_us);
            if (si < 0) continue;
            GpuStep& g = a.steps[static_cast<std::size_t>(si)].gpus[d];
            const std::string& name = t.name_of(*e);
            if (e->category == Category::gpu_memcpy) {
                const Copy c = copy_of(name);
                if (c.kind == CopyKind::h2d && c.pageable) {
                    g.pageable_h2d_us += e->dur_us;
                    ++g.pageable_h2d_copies;
                    if (e->bytes > 0) g.pageable_h2d_bytes += e->bytes;
                }
                continue;
            }
            if (e->category != Category::kernel) continue;
            ++g.kernels;
            kernel_durations[d].push_back(e->dur_us);
            g.kernel_us += e->dur_us;
            TopKernel& k = kernels[e->name];
            if (k.count == 0) {
                k.name = name;
                k.kind = kernel_class(name);
                k.precision = k.kind == KernelClass::gemm ? gemm_precision(name) : GemmPrecision::unknown;
                if (k.kind == KernelClass::gemm && k.precision == GemmPrecision::unknown)
                    if (auto it = op_input_type.find(e->external_id); it != op_input_type.end())
                        k.precision = precision_of_input_type(t.names[it->second]);
            }
            ++k.count;
            k.us += e->dur_us;
            if (k.kind == KernelClass::gemm) {
                g.gemm_us += e->dur_us;
                if (k.precision == GemmPrecision::fp32) g.fp32_gemm_us += e->dur_us;
                a.gemm_precision_us[static_cast<std::size_t>(k.precision)] += e->dur_us;
            }
        }
    for (std::vector<double>& durations : kernel_durations) {
        double median = 0;
        if (!durations.empty()) {
            std::nth_element(durations.begin(), durations.begin() + static_cast<std::ptrdiff_t>(durations.size() / 2),
                             durations.end());
            median = durations[durations.size() / 2];
        }
        a.median_kernel_us.push_back(median);
    }
    for (auto& [id, k] : kernels) a.kernels.push_back(std::move(k));
    std::sort(a.kernels.begin(), a.kernels.end(),
              [](const TopKernel& x, const TopKernel& y) { return x.us != y.us ? x.us > y.us : x.name < y.name; });
}

void analyse_host(const Trace& t, const Nesting& n, std::int64_t pid, std::int64_t tid, Analysis& a,
                  std::vector<Piece>& host_pieces) {
    const std::vector<TraceEvent>& ev = t.events;
    std::vector<Span> spans;
    // Per step: the backward's first and last autograd function (any thread), and the forward's
    // top-level operators before it (the step thread).
    std::vector<std::pair<double, double>> backward(a.steps.size(), {0, -1});
    for (const TraceEvent& e : ev) {
        if (!is_op(e) || op_role(t.name_of(e)) != OpRole::backward) continue;
        const std::int64_t si = step_at(a.steps, e.ts_us);
        if (si < 0) continue;
        auto& [lo, hi] = backward[static_cast<std::size_t>(si)];
        if (hi < lo)
            lo = e.ts_us, hi = e.ts_us + e.dur_us;
        else
            lo = std::min(lo, e.ts_us), hi = std::max(hi, e.ts_us + e.dur_us);
    }
    std::vector<std::pair<double, double>> forward(a.steps.size(), {0, -1});
    for (std::size_t i = 0; i < ev.size(); ++i) {
        const TraceEvent& e = ev[i];
        if (e.pid != pid || e.tid != tid) continue;
        const double end = e.ts_us + e.dur_us;
        if ((e.category == Category::cuda_runtime || e.category == Category::cuda_driver) &&
            is_sync_call(t.name_of(e))) {
            spans.push_back({e.ts_us, end, static_cast<int>(HostPhase::sync)});
            continue;
        }
        if (!is_op(e) || is_step_mark(t, e)) continue;
        const OpRole role = op_role(t.name_of(e));
        if (role == OpRole::data) spans.push_back({e.ts_us, end, static_cast<int>(HostPhase::data)});
        if (role == OpRole::optimizer) spans.push_back({e.ts_us, end, static_cast<int>(HostPhase::optimizer)});
        if (n.op_parent[i] >= 0) continue;  // the rest counts at the top level only
        if (role == OpRole::to_device) spans.push_back({e.ts_us, end, static_cast<int>(HostPhase::to_device)});
        if (role != OpRole::none) continue;
        const std::int64_t si = step_at(a.steps, e.ts_us);
        if (si < 0) continue;
        const auto& bw = backward[static_cast<std::size_t>(si)];
        if (bw.second >= bw.first && e.ts_us >= bw.first) continue;  // after the backward began
        auto& [lo, hi] = forward[static_cast<std::size_t>(si)];
        if (hi < lo)
            lo = e.ts_us, hi = end;
        else
            lo = std::min(lo, e.ts_us), hi = std::max(hi, end);
    }
    for (std::size_t s = 0; s < a.steps.size(); ++s) {
        if (backward[s].second >= backward[s].first)
            spans.push_back({backward[s].first, backward[s].second, static_cast<int>(HostPhase::backward)});
        if (forward[s].second >= forward[s].first)
            spans.push_back({forward[s].first, forward[s].second, static_cast<int>(HostPhase::forward)});
    }
    if (a.steps.empty()) return;
    host_pieces = partition(spans, a.steps.front().start_us, a.steps.back().start_us + a.steps.back().dur_us);
    const std::vector<Piece>& pieces = host_pieces;
    for (Step& s : a.steps) {
        std::vector<double> by(kHostPhases, 0.0);
        add_clipped(pieces, s.start_us, s.start_us + s.dur_us, by);
        double accounted = 0;
        for (std::size_t p = 0; p + 1 < kHostPhases; ++p) accounted += by[p];
        by[static_cast<std::size_t>(HostPhase::other)] = std::max(0.0, s.dur_us - accounted);
        std::copy(by.begin(), by.end(), s.host.us.begin());
    }
}

// Adds [lo, hi) to `field` of GPU `d` in each step it falls in, split as the steps cut it.
void add_by_step(std::vector<Step>& steps, std::size_t d, double lo, double hi, double GpuStep::*field) {
    for (double at = lo; at < hi;) {
        const std::int64_t si = step_at(steps, at);
        if (si < 0) break;
        Step& st = steps[static_cast<std::size_t>(si)];
        const double until = std::min(hi, st.start_us + st.dur_us);
        if (until <= at) break;
        st.gpus[d].*field += until - at;
        at = until;
    }
}

// The GPU's idle by cause, step by step: what the syncs are charged (sync_cost), and launch_bound's
// cost: host-wait and launch-gap idle while the host was neither in the DataLoader nor in a sync, less
// what a sync is charged. So no idle instant is counted by both.
void attribute_idle(const std::vector<DeviceTimeline>& timelines, const std::vector<Piece>& host,
                    const SyncCharges& charges, Analysis& a) {
    for (std::size_t d = 0; d < timelines.size(); ++d) {
        const std::vector<Piece>& charged = charges.by_device[d];
        for (const Piece& c : charged) add_by_step(a.steps, d, c.start, c.end, &GpuStep::idle_sync_us);
        auto h = host.begin();
        auto c = charged.begin();
        for (const Piece& g : timelines[d].pieces) {
            if (g.label != static_cast<int>(GpuSlice::idle_host_wait) &&
                g.label != static_cast<int>(GpuSlice::idle_launch_gap))
                continue;
            while (h != host.end() && h->end <= g.start) ++h;
            for (auto k = h; k != host.end() && k->start < g.end; ++k) {
                if (k->label == static_cast<int>(HostPhase::data) || k->label == static_cast<int>(HostPhase::sync))
                    continue;
                double lo = std::max(g.start, k->start);
                const double hi = std::min(g.end, k->end);
                // What lies outside the charged pieces.
                while (c != charged.end() && c->end <= lo) ++c;
                for (auto q = c; lo < hi && q != charged.end() && q->start < hi; ++q) {
                    if (q->start > lo) add_by_step(a.steps, d, lo, q->start, &GpuStep::idle_host_busy_us);
                    lo = std::max(lo, q->end);
                }
                if (hi > lo) add_by_step(a.steps, d, lo, hi, &GpuStep::idle_host_busy_us);
            }
        }
    }
}

void analyse_ops(const Trace& t, const Nesting& n, Analysis& a) {
    const std::vector<TraceEvent>& ev = t.events;
    std::vector<double> child_us(ev.size(), 0.0);
    for (std::size_t i = 0; i < ev.size(); ++i)
        if (ev[i].category == Category::cpu_op && n.op_parent[i] >= 0)
            child_us[static_cast<std::size_t>(n.op_parent[i])] += ev[i].dur_us;
    std::map<std::uint32_t, TopOp> ops;
    for (std::size_t i = 0; i < ev.size(); ++i) {
        const TraceEvent& e = ev[i];
        if (e.category != Category::cpu_op || step_at(a.steps, e.ts_us) < 0) continue;
        TopOp& o = ops[e.name];
        if (o.count++ == 0) o.name = t.name_of(e);
        o.self_us += std::max(0.0, e.dur_us - child_us[i]);
        const std::int64_t p = n.op_parent[i];
        if (p < 0 || ev[static_cast<std::size_t>(p)].name != e.name) o.total_us += e.dur_us;
    }
    for (auto& [id, o] : ops) a.ops.push_back(std::move(o));
    std::sort(a.ops.begin(), a.ops.end(), [](const TopOp& x, const TopOp& y) {
        return x.self_us != y.self_us ? x.self_us > y.self_us : x.name < y.name;
    });
}

// Where a host event happened: the innermost user frame among the Python frames around it, else the
// first user frame of its own or an enclosing operator's "Call stack".
std::string where_of(const Trace& t, const Nesting& n, std::size_t i) {
    const std::vector<TraceEvent>& ev = t.events;
    for (std::int64_t p = static_cast<std::int64_t>(i); p >= 0; p = n.parent[static_cast<std::size_t>(p)]) {
        const TraceEvent& e = ev[static_cast<std::size_t>(p)];
        if (e.category == Category::python_function && is_user_frame(t.name_of(e))) return t.name_of(e);
        if (e.stack != TraceEvent::kNoStack) {
            std::string f = user_frame_of_stack(t.names[e.stack]);
            if (!f.empty()) return f;
        }
    }
    return "";
}

// The operator a call was made for: the outermost operator around it named like one (aten::item over
// aten::_local_scalar_dense), else the innermost around it.
std::string op_of(const Trace& t, const Nesting& n, std::size_t i) {
    const std::vector<TraceEvent>& ev = t.events;
    std::string outermost, innermost;
    for (std::int64_t p = static_cast<std::int64_t>(i); p >= 0; p = n.op_parent[static_cast<std::size_t>(p)]) {
        const TraceEvent& e = ev[static_cast<std::size_t>(p)];
        if (!is_op(e) || is_step_mark(t, e)) continue;
        const std::string& name = t.name_of(e);
        if (innermost.empty()) innermost = name;
        if (name.find("::") != std::string::npos && !starts_with(name, "autograd::")) outermost = name;
    }
    return outermost.empty() ? innermost : outermost;
}

SyncCharges analyse_syncs(const Trace& t, const Nesting& n, const std::vector<DeviceTimeline>& timelines,
                          const std::vector<Piece>& host_pieces, Analysis& a) {
    const std::vector<TraceEvent>& ev = t.events;
    struct Key {
        std::string call, op, where;
        bool operator<(const Key& o) const { return std::tie(call, op, where) < std::tie(o.call, o.op, o.where); }
    };
    std::map<Key, SyncSite> sites;  // (std::map: a site's address holds while others are added)
    std::map<Key, std::vector<bool>> in_step;
    std::vector<SyncCall> calls;
    std::vector<SyncSite*> call_site;
    for (std::size_t i = 0; i < ev.size(); ++i) {
        const TraceEvent& e = ev[i];
        const bool call =
            (e.category == Category::cuda_runtime || e.category == Category::cuda_driver) && is_sync_call(t.name_of(e));
        // Without GPU activity a scalar read is where the host would wait for a GPU.
        const bool read = !a.has_gpu && e.category == Category::cpu_op && is_scalar_read(t.name_of(e));
        if (!call && !read) continue;
        const std::int64_t si = step_at(a.steps, e.ts_us);
        if (si < 0) continue;
        // One site a line: the operator is what was called there (the legacy profiler's whole
        // microseconds can leave aten::_local_scalar_dense outside its aten::item: the public name
        // wins when both are seen).
        std::string op = op_of(t, n, i), where = where_of(t, n, i);
        Key k{call ? t.name_of(e) : "", where.empty() ? op : "", where};
        SyncSite& s = sites[k];
        if (s.count == 0 || (starts_with(s.op, "aten::_") && !starts_with(op, "aten::_"))) s.op = std::move(op);
        s.call = k.call, s.where = k.where;
        ++s.count;
        s.host_us += e.dur_us;
        std::vector<bool>& seen = in_step[k];
        seen.resize(a.steps.size(), false);
        seen[static_cast<std::size_t>(si)] = true;
        if (call) {
            calls.push_back({e.ts_us, e.ts_us + e.dur_us});
            call_site.push_back(&s);
        }
    }
    // What each call cost the GPU, each idle instant charged once (sync_cost).
    std::vector<std::vector<Piece>> gpus;
    for (const DeviceTimeline& d : timelines) gpus.push_back(d.pieces);
    std::vector<std::pair<double, double>> bounds;
    for (const Step& st : a.steps) bounds.emplace_back(st.start_us, st.start_us + st.dur_us);
    SyncCharges charges =
        charge_syncs(calls, gpus, host_pieces, bounds,
                     {static_cast<int>(GpuSlice::idle_host_wait), static_cast<int>(GpuSlice::idle_launch_gap),
                      static_cast<int>(GpuSlice::idle_other), static_cast<int>(HostPhase::data)});
    for (std::size_t k = 0; k < calls.size(); ++k) call_site[k]->gpu_idle_us += charges.per_call_us[k];
    for (auto& [k, s] : sites) {
        s.steps = static_cast<std::size_t>(std::count(in_step[k].begin(), in_step[k].end(), true));
        a.syncs.push_back(std::move(s));
    }
    std::sort(a.syncs.begin(), a.syncs.end(), [](const SyncSite& x, const SyncSite& y) {
        if (x.gpu_idle_us != y.gpu_idle_us) return x.gpu_idle_us > y.gpu_idle_us;
        return x.host_us > y.host_us;
    });
    return charges;
}

}  // namespace

bool is_idle(GpuSlice s) {
    return s == GpuSlice::idle_host_wait || s == GpuSlice::idle_launch_gap || s == GpuSlice::idle_other;
}

double GpuStep::idle() const {
    return us[static_cast<std::size_t>(GpuSlice::idle_host_wait)] +
           us[static_cast<std::size_t>(GpuSlice::idle_launch_gap)] + us[static_cast<std::size_t>(GpuSlice::idle_other)];
}

double GpuStep::busy() const {
    double sum = 0;
    for (double v : us) sum += v;
    return sum - idle();
}

double Analysis::step_us() const {
    double sum = 0;
    for (const Step& s : steps) sum += s.dur_us;
    return sum;
}

GpuStep Analysis::mean_gpu(int device) const {
    GpuStep m;
    m.device = device;
    if (steps.empty()) return m;
    const auto d = std::find(devices.begin(), devices.end(), device);
    if (d == devices.end()) return m;
    const std::size_t at = static_cast<std::size_t>(d - devices.begin());
    for (const Step& s : steps) {
        const GpuStep& g = s.gpus[at];
        for (std::size_t i = 0; i < kGpuSlices; ++i) m.us[i] += g.us[i];
        m.kernels += g.kernels;
        m.kernel_us += g.kernel_us;
        m.comm_us += g.comm_us;
        m.comm_hidden_us += g.comm_hidden_us;
        m.pageable_h2d_us += g.pageable_h2d_us;
        m.pageable_h2d_copies += g.pageable_h2d_copies;
        m.pageable_h2d_bytes += g.pageable_h2d_bytes;
        m.fp32_gemm_us += g.fp32_gemm_us;
        m.gemm_us += g.gemm_us;
        m.idle_host_busy_us += g.idle_host_busy_us;
        m.idle_sync_us += g.idle_sync_us;
    }
    const double n = static_cast<double>(steps.size());
    for (double& v : m.us) v /= n;
    m.kernels = static_cast<std::size_t>(static_cast<double>(m.kernels) / n + 0.5);
    m.kernel_us /= n, m.comm_us /= n, m.comm_hidden_us /= n, m.pageable_h2d_us /= n;
    m.pageable_h2d_copies = static_cast<std::size_t>(static_cast<double>(m.pageable_h2d_copies) / n + 0.5);
    m.pageable_h2d_bytes = static_cast<std::int64_t>(static_cast<double>(m.pageable_h2d_bytes) / n);
    m.fp32_gemm_us /= n, m.gemm_us /= n, m.idle_host_busy_us /= n, m.idle_sync_us /= n;
    return m;
}

HostStep Analysis::mean_host() const {
    HostStep m;
    if (steps.empty()) return m;
    for (const Step& s : steps)
        for (std::size_t i = 0; i < kHostPhases; ++i) m.us[i] += s.host.us[i];
    for (double& v : m.us) v /= static_cast<double>(steps.size());
    return m;
}

bool is_user_frame(std::string_view f) {
    // "file.py(12): fn": a file, a line number, a function; built-ins ("<built-in method item of
    // Tensor object at 0x..>") and module markers ("nn.Module: Linear_0") have no line. "<string>"
    // and "<stdin>" are the user's (python -c, a pipe).
    const std::size_t colon = f.find("): ");
    const std::size_t open = f.substr(0, colon).rfind('(');
    if (colon == std::string_view::npos || open == std::string_view::npos || open + 1 == colon) return false;
    for (char c : f.substr(open + 1, colon - open - 1))
        if (c < '0' || c > '9') return false;
    const std::string_view file = f.substr(0, open);
    if (starts_with(file, "torch/") || starts_with(file, "baton/") || starts_with(file, "<frozen")) return false;
    for (std::string_view lib : {"site-packages/", "dist-packages/", "/lib/python3", "/torch/"})
        if (file.find(lib) != std::string_view::npos) return false;
    return true;
}

namespace {

// The pieces of [from, to) among `pieces` (in order), clipped.
std::vector<Piece> clip(const std::vector<Piece>& pieces, double from, double to) {
    std::vector<Piece> out;
    for (const Piece& p : pieces) {
        const double a = std::max(p.start, from), b = std::min(p.end, to);
        if (b > a) out.push_back({a, b, p.label});
    }
    return out;
}

// The step of median duration as lanes: the host's phases, and each GPU stream's activities.
void draw_timeline(const std::vector<Piece>& host_pieces, const std::vector<DeviceTimeline>& devices, Analysis& a) {
    if (a.steps.empty()) return;
    std::vector<std::size_t> order(a.steps.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(order.size() / 2), order.end(),
                     [&](std::size_t x, std::size_t y) { return a.steps[x].dur_us < a.steps[y].dur_us; });
    const Step& s = a.steps[order[order.size() / 2]];
    Timeline& tl = a.timeline;
    tl.step = s.number;
    tl.start_us = s.start_us;
    tl.dur_us = s.dur_us;
    const double from = s.start_us, to = s.start_us + s.dur_us;
    tl.lanes.push_back({"host", false, clip(host_pieces, from, to)});
    for (std::size_t d = 0; d < devices.size(); ++d) {
        std::map<std::int64_t, std::vector<Span>> streams;
        for (std::size_t i = 0; i < devices[d].events.size(); ++i) {
            const TraceEvent* e = devices[d].events[i];
            if (e->ts_us < to && e->ts_us + e->dur_us > from)
                streams[e->stream].push_back({e->ts_us, e->ts_us + e->dur_us, devices[d].slices[i]});
        }
        for (const auto& [stream, spans] : streams) {
            std::vector<Piece> pieces;
            for (const Piece& p : partition(spans, from, to))
                if (p.label >= 0) pieces.push_back(p);
            tl.lanes.push_back({fmt_lane(a.devices[d], stream), true, std::move(pieces)});
        }
    }
}

}  // namespace

namespace {

// Device kinds known by their categories' prefix, whose activity baton reads but does not judge.
constexpr std::pair<std::string_view, std::string_view> kOtherDeviceKinds[] = {
    {"mtia", "MTIA"},
    {"hpu", "Gaudi (HPU)"},
    {"xla", "XLA"},
};

std::vector<OtherDevice> other_devices_of(const Trace& t) {
    std::vector<OtherDevice> out;
    for (const auto& [cat, count] : t.other_categories) {
        const std::string lower = text::ascii_lower(cat);
        for (const auto& known : kOtherDeviceKinds) {
            const std::string_view kind = known.second;
            if (!starts_with(lower, known.first)) continue;
            auto it = std::find_if(out.begin(), out.end(), [&](const OtherDevice& d) { return d.kind == kind; });
            if (it == out.end()) it = out.insert(out.end(), OtherDevice{std::string(kind), {}});
            it->categories.emplace_back(cat, count);
        }
    }
    return out;
}

}  // namespace

GpuArch Analysis::arch(int device) const {
    const DeviceProperties* p = nullptr;
    for (const DeviceProperties& d : properties)
        if (d.id == device) p = &d;
    if (!p && properties.size() == 1) p = &properties.front();
    const std::string name = p ? text::ascii_lower(p->name) : std::string();
    if (rocm || name.find("amd") != std::string::npos || name.find("radeon") != std::string::npos ||
        name.find("instinct") != std::string::npos)
        return GpuArch::amd;
    if (!p || p->compute_major < 0) return GpuArch::unknown;
    const int cc = p->compute_major * 10 + std::max(0, p->compute_minor);
    if (cc < 70) return GpuArch::pre_volta;
    if (cc < 75) return GpuArch::volta;
    if (cc < 80) return GpuArch::turing;
    if (cc < 89) return GpuArch::ampere;
    if (cc < 90) return GpuArch::ada;
    if (cc < 100) return GpuArch::hopper;
    return GpuArch::blackwell;
}

std::string no_stack_hint(const Analysis& a) {
    if (a.legacy)
        return "(the legacy profiler records no Python stacks, even with with_stack=True: baton run --profile "
               "adds them, or record with a PyTorch built with Kineto)";
    return "(the trace has no Python stacks: record with with_stack=True)";
}

Analysis analyse(const Trace& trace) {
    Analysis a;
    a.legacy = trace.legacy;
    a.events = trace.events.size();
    a.properties = trace.devices;
    a.range_profiler_kernels = trace.range_profiler_kernels;
    a.other_devices = other_devices_of(trace);
    std::int64_t pid = 0, tid = 0;
    a.steps = find_steps(trace, pid, tid);
    for (const TraceEvent& e : trace.events) {
        if (e.category == Category::cuda_runtime && !a.rocm && starts_with(trace.name_of(e), "hip")) a.rocm = true;
        if (is_step_mark(trace, e)) a.has_steps = true;
        if (e.category == Category::python_function || e.stack != TraceEvent::kNoStack) a.has_stacks = true;
        if (is_op(e) && op_role(trace.name_of(e)) == OpRole::data && a.loader != Analysis::Loader::workers)
            a.loader = trace.name_of(e).find("MultiProcessing") != std::string::npos ? Analysis::Loader::workers
                                                                                     : Analysis::Loader::in_process;
    }
    const Nesting n = nest(trace);
    std::vector<DeviceTimeline> timelines;
    analyse_gpus(trace, a, timelines);
    std::vector<Piece> host_pieces;
    analyse_host(trace, n, pid, tid, a, host_pieces);
    analyse_ops(trace, n, a);
    const SyncCharges charges = analyse_syncs(trace, n, timelines, host_pieces, a);
    attribute_idle(timelines, host_pieces, charges, a);
    draw_timeline(host_pieces, timelines, a);
    return a;
}

}  // namespace baton::profile
