#include "report/profile_view.hpp"

#include <algorithm>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/json_writer.hpp"
#include "formats/finding_json.hpp"

namespace baton::report {

namespace {

using profile::Analysis;
using profile::GpuSlice;
using profile::GpuStep;
using profile::HostPhase;
using profile::HostStep;

double ms(double us) {
    return us / 1000;
}

std::string bar(double share) {
    const int n = static_cast<int>(std::clamp(share, 0.0, 1.0) * 30 + 0.5);
    std::string s;
    for (int i = 0; i < n; ++i) s += "#";
    return s;
}

std::string cut(const std::string& s, std::size_t n) {
    return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

const char* gpu_slice_label(GpuSlice s) {
    switch (s) {
        case GpuSlice::gemm:
            return "GEMM";
        case GpuSlice::conv:
            return "convolution";
        case GpuSlice::attention:
            return "attention";
        case GpuSlice::elementwise:
            return "elementwise";
        case GpuSlice::reduction:
            return "reduction";
        case GpuSlice::other_kernel:
            return "other kernels";
        case GpuSlice::communication:
            return "NCCL (exposed)";
        case GpuSlice::memcpy_h2d:
            return "copy H2D";
        case GpuSlice::memcpy_d2h:
            return "copy D2H";
        case GpuSlice::memcpy_d2d:
            return "copy D2D";
        case GpuSlice::memset:
            return "memset";
        case GpuSlice::idle_host_wait:
            return "idle: host wait";
        case GpuSlice::idle_launch_gap:
            return "idle: launch gap";
        case GpuSlice::idle_other:
            return "idle: other";
    }
    return "";
}

const char* host_phase_label(HostPhase p) {
    switch (p) {
        case HostPhase::sync:
            return "sync (waits for GPU)";
        case HostPhase::data:
            return "DataLoader";
        case HostPhase::optimizer:
            return "optimizer";
        case HostPhase::backward:
            return "backward";
        case HostPhase::to_device:
            return ".to() / copy_";
        case HostPhase::forward:
            return "forward";
        case HostPhase::other:
            return "other";
    }
    return "";
}

std::string steps_text(const Analysis& a) {
    if (!a.has_steps) return "no ProfilerStep marks: the whole trace is one step";
    return fmt::format("{} step{} (#{} to #{})", a.steps.size(), a.steps.size() == 1 ? "" : "s", a.steps.front().number,
                       a.steps.back().number);
}

void gpu_text(const Analysis& a, int device, double step_us, std::string& out) {
    const GpuStep g = a.mean_gpu(device);
    out += fmt::format("GPU{}                     ms/step  share\n", device);
    for (std::size_t i = 0; i < profile::kGpuSlices; ++i) {
        if (g.us[i] <= 0) continue;
        const double share = step_us > 0 ? g.us[i] / step_us : 0;
        out += fmt::format("  {:<22} {:>8.2f}  {:>4.0f} %  {}\n", gpu_slice_label(static_cast<GpuSlice>(i)),
                           ms(g.us[i]), share * 100, bar(share));
    }
    const std::size_t d =
        static_cast<std::size_t>(std::find(a.devices.begin(), a.devices.end(), device) - a.devices.begin());
    out +=
        fmt::format("  busy {:.0f} %, {} kernels a step (median {:.1f} us)", step_us > 0 ? 100 * g.busy() / step_us : 0,
                    g.kernels, d < a.median_kernel_us.size() ? a.median_kernel_us[d] : 0.0);
    if (g.comm_us > 0)
        out += fmt::format("; NCCL {:.2f} ms a step, {:.0f} % of it hidden under compute", ms(g.comm_us),
                           100 * g.comm_hidden_us / g.comm_us);
    if (g.pageable_h2d_copies > 0)
        out += fmt::format("; {} pageable H2D copies ({:.2f} ms)", g.pageable_h2d_copies, ms(g.pageable_h2d_us));
    out += "\n\n";
}

void host_text(const Analysis& a, double step_us, std::string& out) {
    const HostStep h = a.mean_host();
    out += "Host (the steps' thread)   ms/step  share\n";
    for (std::size_t i = 0; i < profile::kHostPhases; ++i) {
        if (h.us[i] <= 0) continue;
        const double share = step_us > 0 ? h.us[i] / step_us : 0;
        out += fmt::format("  {:<22} {:>8.2f}  {:>4.0f} %  {}\n", host_phase_label(static_cast<HostPhase>(i)),
                           ms(h.us[i]), share * 100, bar(share));
    }
    out += "\n";
}

void steps_table(const Analysis& a, std::string& out) {
    if (a.steps.size() < 2) return;
    out += "Steps          ms   DataLoader";
    for (int d : a.devices) out += fmt::format("   GPU{} busy", d);
    out += "\n";
    for (const profile::Step& s : a.steps) {
        out += fmt::format("  #{:<8} {:>7.2f}   {:>8.2f}", s.number, ms(s.dur_us),
                           ms(s.host.us[static_cast<std::size_t>(HostPhase::data)]));
        for (const GpuStep& g : s.gpus)
            out += fmt::format("   {:>7.0f} %", s.dur_us > 0 ? 100 * g.busy() / s.dur_us : 0);
        out += "\n";
    }
    out += "\n";
}

void syncs_text(const Analysis& a, std::string& out) {
    if (a.syncs.empty()) return;
    const double n = static_cast<double>(std::max<std::size_t>(1, a.steps.size()));
    if (a.has_gpu) {
        out += "Where the host waited for the GPU   a step  host ms  GPU idle ms\n";
    } else {
        out += "Where the host would wait for a GPU (scalar reads: .item(), .tolist(), bool(t))   a step\n";
    }
    for (const profile::SyncSite& s : a.syncs) {
        std::string what = s.op.empty() ? s.call : s.op;
        if (!s.call.empty() && !s.op.empty()) what += " (" + s.call + ")";
        const std::string where = s.where.empty()
                                      ? (a.has_stacks ? "(no frame of your code around it)" : profile::no_stack_hint(a))
                                      : "at " + s.where;
        if (a.has_gpu)
            out += fmt::format("  {:>5.1f} {:>8.2f} {:>12.2f}   {} {}\n", static_cast<double>(s.count) / n,
                               ms(s.host_us) / n, ms(s.gpu_idle_us) / n, what, where);
        else
            out += fmt::format("  {:>5.1f}   {} {}\n", static_cast<double>(s.count) / n, what, where);
    }
    out += "\n";
}

void kernels_text(const Analysis& a, std::size_t top, double step_us, std::string& out) {
    if (a.kernels.empty()) return;
    const double n = static_cast<double>(std::max<std::size_t>(1, a.steps.size()));
    out += "Top kernels        ms/step  share  a step  class          name\n";
    for (std::size_t i = 0; i < std::min(top, a.kernels.size()); ++i) {
        const profile::TopKernel& k = a.kernels[i];
        std::string kind = enum_name(k.kind);
        if (k.precision != profile::GemmPrecision::unknown) kind += std::string(" ") + enum_name(k.precision);
        out += fmt::format("  {:>24.3f} {:>5.1f} % {:>7.1f}  {:<14} {}\n", ms(k.us) / n,
                           step_us > 0 ? 100 * k.us / n / step_us : 0, static_cast<double>(k.count) / n, kind,
                           cut(k.name, 90));
    }
    out += "\n";
}

void ops_text(const Analysis& a, std::size_t top, double step_us, std::string& out) {
    if (a.ops.empty()) return;
    const double n = static_cast<double>(std::max<std::size_t>(1, a.steps.size()));
    out += "Top operators (self time)   ms/step  share  calls a step  name\n";
    for (std::size_t i = 0; i < std::min(top, a.ops.size()); ++i) {
        const profile::TopOp& o = a.ops[i];
        out += fmt::format("  {:>33.3f} {:>5.1f} % {:>13.1f}  {}\n", ms(o.self_us) / n,
                           step_us > 0 ? 100 * o.self_us / n / step_us : 0, static_cast<double>(o.count) / n,
                           cut(o.name, 90));
    }
    out += "\n";
}

void findings_text(const std::vector<diagnose::Finding>& findings, std::string& out) {
    out += "Findings\n";
    if (findings.empty()) out += "  none: nothing costs [profile] min_share of the step or more\n\n";
    for (const diagnose::Finding& f : findings) {
        std::string sev = diagnose::severity_name(f.severity);
        std::transform(sev.begin(), sev.end(), sev.begin(), [](unsigned char c) { return std::toupper(c); });
        out += fmt::format("{:<8}  {}  [{}]  {}\n", sev, f.rule, f.subject, f.summary);
        for (const diagnose::Evidence& e : f.evidence)
            out += fmt::format("          evidence: {} = {:.3g} ({})\n", e.metric, e.average.value_or(0), e.threshold);
        out += "          fix: " + f.recommendation + "\n";
        if (f.snippet) {
            out += "          paste:\n";
            std::string_view s = *f.snippet;
            while (!s.empty()) {
                const std::size_t nl = s.find('\n');
                out += "            " + std::string(s.substr(0, nl)) + "\n";
                s = nl == std::string_view::npos ? std::string_view() : s.substr(nl + 1);
            }
        }
        out += "          see: baton explain " + f.rule + "\n\n";
    }
}

void write_gpu_json(JsonWriter& w, const GpuStep& g) {
    w.begin_object();
    w.field("device", g.device);
    w.key("ms");
    w.begin_object();
    for (std::size_t i = 0; i < profile::kGpuSlices; ++i) {
        w.key(enum_name(static_cast<GpuSlice>(i)));
        w.value(ms(g.us[i]));
    }
    w.end_object();
    w.field("busy_ms", ms(g.busy()));
    w.field("idle_ms", ms(g.idle()));
    w.field("kernels", static_cast<std::uint64_t>(g.kernels));
    w.field("kernel_ms", ms(g.kernel_us));
    w.field("comm_ms", ms(g.comm_us));
    w.field("comm_hidden_ms", ms(g.comm_hidden_us));
    w.field("gemm_ms", ms(g.gemm_us));
    w.field("fp32_gemm_ms", ms(g.fp32_gemm_us));
    w.field("pageable_h2d_copies", static_cast<std::uint64_t>(g.pageable_h2d_copies));
    w.field("pageable_h2d_bytes", g.pageable_h2d_bytes);
    w.field("pageable_h2d_ms", ms(g.pageable_h2d_us));
    w.field("idle_host_busy_ms", ms(g.idle_host_busy_us));
    w.field("idle_sync_ms", ms(g.idle_sync_us));
    w.end_object();
}

void write_host_json(JsonWriter& w, const HostStep& h) {
    w.begin_object();
    for (std::size_t i = 0; i < profile::kHostPhases; ++i) {
        w.key(enum_name(static_cast<HostPhase>(i)));
        w.value(ms(h.us[i]));
    }
    w.end_object();
}

std::string device_names(const Analysis& a) {
    std::string names;
    for (const profile::DeviceProperties& d : a.properties) {
        if (names.find(d.name) != std::string::npos) continue;
        names += (names.empty() ? "" : ", ") + d.name;
    }
    return names;
}

// What the trace holds besides (or instead of) GPU kernels baton judges: another device kind's
// activity, GPUs listed but not recorded, kernels replayed by CUPTI's range profiler.
void device_notes(const Analysis& a, std::string& out) {
    for (const profile::OtherDevice& d : a.other_devices) {
        std::string counts;
        for (const auto& [cat, n] : d.categories) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, cat);
        const std::string names = device_names(a);
        out += fmt::format(
            "The trace holds {} device activity ({} events{}), which baton profile does not judge: it breaks "
            "down NVIDIA and AMD GPUs' kernels. The host's time below is read as for any trace.\n\n",
            d.kind, counts, names.empty() ? "" : "; devices: " + names);
    }
    if (!a.has_gpu && a.other_devices.empty()) {
        if (!a.properties.empty())
            out += fmt::format(
                "No GPU activity in the trace, although it lists {} device{} ({}): the profiler ran without "
                "ProfilerActivity.CUDA (activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] records it).\n\n",
                a.properties.size(), a.properties.size() == 1 ? "" : "s", device_names(a));
        else
            out += "No GPU activity in the trace (recorded without CUDA, or on the CPU).\n\n";
    }
    if (a.range_profiler_kernels > 0)
        out += fmt::format(
            "{} kernels come from CUPTI's range profiler (cuda_profiler_range): each was replayed to count "
            "hardware metrics, so their times are not the run's. The GPU rows show them as recorded; no GPU "
            "finding is judged on them.\n\n",
            a.range_profiler_kernels);
}

}  // namespace

void append_profile_text(const ProfileInfo& info, const Analysis& a, const std::vector<diagnose::Finding>& findings,
                         std::string& out) {
    const double step_us = a.steps.empty() ? 0 : a.step_us() / static_cast<double>(a.steps.size());
    out += fmt::format("baton profile: {} ({} trace, {} events), {}, {} GPU{}\n", info.source,
                       a.legacy ? "legacy profiler" : "Kineto", a.events, steps_text(a), a.devices.size(),
                       a.devices.size() == 1 ? "" : "s");
    if (a.steps.empty()) {
        out += "The trace has no events in any step: nothing to break down.\n";
        return;
    }
    double lo = a.steps.front().dur_us, hi = lo;
    for (const profile::Step& s : a.steps) lo = std::min(lo, s.dur_us), hi = std::max(hi, s.dur_us);
    out += fmt::format("Step: {:.2f} ms on average (min {:.2f}, max {:.2f})\n\n", ms(step_us), ms(lo), ms(hi));
    device_notes(a, out);
    for (int d : a.devices) gpu_text(a, d, step_us, out);
    host_text(a, step_us, out);
    steps_table(a, out);
    syncs_text(a, out);
    kernels_text(a, info.top, step_us, out);
    ops_text(a, info.top, step_us, out);
    findings_text(findings, out);
}

void append_profile_json(const ProfileInfo& info, const Analysis& a, const std::vector<diagnose::Finding>& findings,
                         std::string& out) {
    JsonWriter w(out);
    w.begin_object();
    w.field("source", info.source);
    w.field("format", a.legacy ? "legacy" : "kineto");
    w.field("events", static_cast<std::uint64_t>(a.events));
    w.field("has_steps", a.has_steps);
    w.field("has_gpu", a.has_gpu);
    w.field("has_stacks", a.has_stacks);
    w.field("loader", enum_name(a.loader));
    w.key("devices");
    w.begin_array();
    for (int d : a.devices) w.value(d);
    w.end_array();
    w.key("device_properties");
    w.begin_array();
    for (const profile::DeviceProperties& d : a.properties) {
        w.begin_object();
        w.field("id", d.id);
        w.field("name", d.name);
        if (d.compute_major >= 0 && !a.rocm && a.arch(d.id) != profile::GpuArch::amd)
            w.field("compute_capability", fmt::format("{}.{}", d.compute_major, std::max(0, d.compute_minor)));
        w.field("arch", enum_name(a.arch(d.id)));
        w.end_object();
    }
    w.end_array();
    w.field("rocm", a.rocm);
    w.field("range_profiler_kernels", static_cast<std::uint64_t>(a.range_profiler_kernels));
    w.key("other_devices");
    w.begin_array();
    for (const profile::OtherDevice& d : a.other_devices) {
        w.begin_object();
        w.field("kind", d.kind);
        w.key("events");
        w.begin_object();
        for (const auto& [cat, n] : d.categories) {
            w.key(cat);
            w.value(static_cast<std::uint64_t>(n));
        }
        w.end_object();
        w.end_object();
    }
    w.end_array();
    const double n = static_cast<double>(std::max<std::size_t>(1, a.steps.size()));
    w.key("mean");
    w.begin_object();
    w.field("step_ms", a.steps.empty() ? 0.0 : ms(a.step_us()) / n);
    w.key("host");
    write_host_json(w, a.mean_host());
    w.key("gpus");
    w.begin_array();
    for (std::size_t d = 0; d < a.devices.size(); ++d) {
        GpuStep g = a.mean_gpu(a.devices[d]);
        write_gpu_json(w, g);
    }
    w.end_array();
    w.end_object();
    w.key("steps");
    w.begin_array();
    for (const profile::Step& s : a.steps) {
        w.begin_object();
        w.field("number", s.number);
        w.field("start_us", s.start_us);
        w.field("ms", ms(s.dur_us));
        w.key("host");
        write_host_json(w, s.host);
        w.key("gpus");
        w.begin_array();
        for (const GpuStep& g : s.gpus) write_gpu_json(w, g);
        w.end_array();
        w.end_object();
    }
    w.end_array();
    w.key("syncs");
    w.begin_array();
    for (const profile::SyncSite& s : a.syncs) {
        w.begin_object();
        w.field("call", s.call);
        w.field("op", s.op);
        w.field("where", s.where);
        w.field("count", static_cast<std::uint64_t>(s.count));
        w.field("steps", static_cast<std::uint64_t>(s.steps));
        w.field("host_ms", ms(s.host_us));
        w.field("gpu_idle_ms", ms(s.gpu_idle_us));
        w.end_object();
    }
    w.end_array();
    w.key("kernels");
    w.begin_array();
    for (std::size_t i = 0; i < std::min(info.top, a.kernels.size()); ++i) {
        const profile::TopKernel& k = a.kernels[i];
        w.begin_object();
        w.field("name", k.name);
        w.field("class", enum_name(k.kind));
        w.field("precision", enum_name(k.precision));
        w.field("count", static_cast<std::uint64_t>(k.count));
        w.field("ms", ms(k.us));
        w.end_object();
    }
    w.end_array();
    w.key("ops");
    w.begin_array();
    for (std::size_t i = 0; i < std::min(info.top, a.ops.size()); ++i) {
        const profile::TopOp& o = a.ops[i];
        w.begin_object();
        w.field("name", o.name);
        w.field("count", static_cast<std::uint64_t>(o.count));
        w.field("self_ms", ms(o.self_us));
        w.field("total_ms", ms(o.total_us));
        w.end_object();
    }
    w.end_array();
    w.key("gemm_precision_ms");
    w.begin_object();
    for (std::size_t i = 0; i < a.gemm_precision_us.size(); ++i) {
        w.key(enum_name(static_cast<profile::GemmPrecision>(i)));
        w.value(ms(a.gemm_precision_us[i]));
    }
    w.end_object();
    w.key("findings");
    w.begin_array();
    for (const diagnose::Finding& f : findings) formats::write_finding_json(w, f);
    w.end_array();
    w.end_object();
    w.finish();
}

}  // namespace baton::report
