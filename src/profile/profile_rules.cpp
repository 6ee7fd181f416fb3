#include "profile/profile_rules.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "diagnose/loader_advice.hpp"
#include "diagnose/rules.hpp"

namespace baton::profile {

namespace {

using diagnose::Evidence;
using diagnose::Finding;
using diagnose::Severity;

// launch_bound needs many short kernels: a step of a few long kernels that idles between them is
// waiting for something else.
constexpr std::size_t kLaunchBoundMinKernels = 20;
constexpr double kLaunchBoundShortKernelUs = 30;
// A finding costing this share of the step or more is a warning; less, information.
constexpr double kWarningShare = 0.15;

struct Judged {
    Finding finding;
    double cost_us = 0;
};

struct Context {
    const Analysis& a;
    const ProfileRuleOptions& o;
    double step_us = 0;  // the mean step
    std::size_t steps = 0;
    std::vector<Judged> out;

    bool worth(double cost_us) const { return step_us > 0 && cost_us >= o.min_share * step_us && cost_us > 0; }

    // The finding with its cost in the summary's words and as the first evidence; a warning from
    // `warning_share` of the step.
    Finding& add(const std::string& rule, std::string subject, double cost_us, std::string what, std::string fix,
                 double warning_share = kWarningShare) {
        const double share = cost_us / step_us;
        Finding f = diagnose::make_finding(rule, share >= warning_share ? Severity::warning : Severity::info,
                                           std::move(subject),
                                           fmt::format("{}: {:.2f} ms of each {:.2f} ms step ({:.0f} %)", what,
                                                       cost_us / 1000, step_us / 1000, share * 100),
                                           std::move(fix));
        Evidence e;
        e.metric = "profile." + rule + "_ms_per_step";
        e.average = cost_us / 1000;
        e.threshold = fmt::format(">= {:.2f} ms: [profile] min_share, {:g} % of the step", o.min_share * step_us / 1000,
                                  o.min_share * 100);
        e.samples = steps;
        f.evidence.push_back(std::move(e));
        out.push_back({std::move(f), cost_us});
        return out.back().finding;
    }
};

Evidence figure(const std::string& metric, double value, const std::string& note) {
    Evidence e;
    e.metric = metric;
    e.average = value;
    e.threshold = note;
    return e;
}

std::string gpu_subject(int device) {
    return fmt::format("gpu:{}", device);
}

void launch_bound(Context& c) {
    for (std::size_t d = 0; d < c.a.devices.size(); ++d) {
        const GpuStep g = c.a.mean_gpu(c.a.devices[d]);
        const double median = c.a.median_kernel_us[d];
        if (g.kernels < kLaunchBoundMinKernels || median > kLaunchBoundShortKernelUs || !c.worth(g.idle_host_busy_us))
            continue;
        Finding& f =
            c.add("launch_bound", gpu_subject(g.device), g.idle_host_busy_us,
                  fmt::format("GPU{} waits for the host to launch its {} short kernels (median {:.1f} us)", g.device,
                              g.kernels, median),
                  "The host cannot issue kernels as fast as the GPU runs them: each launch costs the CPU several "
                  "microseconds, and these kernels are shorter. Capture the step in a CUDA graph "
                  "(torch.compile(mode=\"reduce-overhead\")), fuse small operations (torch.compile), or give each "
                  "kernel more work with a larger batch.");
        f.snippet = "model = torch.compile(model, mode=\"reduce-overhead\")  # CUDA graphs: one launch per step";
        f.evidence.push_back(figure("profile.kernels_per_step", static_cast<double>(g.kernels),
                                    fmt::format(">= {} kernels", kLaunchBoundMinKernels)));
        f.evidence.push_back(
            figure("profile.median_kernel_us", median, fmt::format("<= {:g} us", kLaunchBoundShortKernelUs)));
        f.evidence.push_back(figure("profile.gpu_busy_ms_per_step", g.busy() / 1000, "the GPU's work in a step"));
    }
}

void sync_in_step(Context& c) {
    if (!c.a.has_gpu) return;  // a CPU trace's scalar reads wait for nothing (the analysis lists them)
    const std::size_t every = std::max<std::size_t>(1, (c.steps + 1) / 2);
    for (const SyncSite& s : c.a.syncs) {
        if (s.call.empty() || s.steps < every) continue;
        const double cost = s.gpu_idle_us / static_cast<double>(c.steps);
        if (!c.worth(cost)) continue;
        const std::string at = s.where.empty() ? no_stack_hint(c.a) : "at " + s.where;
        const std::string op = s.op.empty() ? s.call : s.op;
        Finding& f = c.add(
            "sync_in_step", s.where.empty() ? op : s.where, cost,
            fmt::format("the host waits for the GPU in {} ({}) {} times a step {}; the GPU then idles", op, s.call,
                        static_cast<double>(s.count) / static_cast<double>(c.steps), at),
            "A call that needs a GPU value on the host (.item(), .cpu(), .tolist(), print(tensor), a Python "
            "if on a tensor, torch.nonzero) makes the host wait until the GPU has finished everything queued, "
            "and the GPU then idles until the host queues more. Keep such values on the GPU and read them every N "
            "steps (accumulate the loss in a tensor, log it every 100 steps).");
        f.snippet =
            "running_loss += loss.detach()            # stays on the GPU, no sync\n"
            "if step % 100 == 0:\n"
            "    print(running_loss.item() / 100)   # one sync every 100 steps\n"
            "    running_loss.zero_()";
        f.evidence.push_back(figure("profile.sync_calls_per_step",
                                    static_cast<double>(s.count) / static_cast<double>(c.steps),
                                    fmt::format("in {} of {} steps", s.steps, c.steps)));
        f.evidence.push_back(figure("profile.sync_host_ms_per_step", s.host_us / static_cast<double>(c.steps) / 1000,
                                    "the host blocked in the call"));
    }
}

void pageable_copy(Context& c) {
    for (int device : c.a.devices) {
        const GpuStep g = c.a.mean_gpu(device);
        if (g.pageable_h2d_copies == 0 || !c.worth(g.pageable_h2d_us)) continue;
        Finding& f =
            c.add("pageable_copy", gpu_subject(device), g.pageable_h2d_us,
                  fmt::format("GPU{} copies {} MB a step from pageable host memory in {} copies", device,
                              static_cast<double>(g.pageable_h2d_bytes) / 1e6, g.pageable_h2d_copies),
                  "A copy from pageable memory is staged through a driver buffer at a fraction of the link's speed "
                  "and blocks the host until it is done, so it cannot overlap the GPU's work. Have the DataLoader "
                  "pin its batches and copy them without blocking.");
        f.snippet =
            "loader = torch.utils.data.DataLoader(dataset, batch_size=..., num_workers=..., pin_memory=True)\n"
            "x = x.to(device, non_blocking=True)";
        f.evidence.push_back(figure("profile.pageable_h2d_copies_per_step", static_cast<double>(g.pageable_h2d_copies),
                                    "Memcpy HtoD (Pageable -> Device)"));
    }
}

// fp32_matmul's fix for a GPU generation: what its tensor cores take (docs/findings.md#fp32_matmul).
struct MatmulFix {
    std::string fix, snippet;
};

MatmulFix matmul_fix(GpuArch arch, int device) {
    static const std::string kFp16Amp =
        "scaler = torch.amp.GradScaler(\"cuda\")\n"
        "with torch.autocast(\"cuda\", dtype=torch.float16):\n"
        "    loss = model(x)\n"
        "scaler.scale(loss).backward()\n"
        "scaler.step(optimizer)\n"
        "scaler.update()";
    static const std::string kTf32 =
        "torch.backends.cuda.matmul.allow_tf32 = True   # or: torch.set_float32_matmul_precision(\"high\")\n"
        "torch.backends.cudnn.allow_tf32 = True\n"
        "# or mixed precision, no GradScaler needed with bf16:\n"
        "with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n"
        "    loss = model(x)";
    const std::string these = "These GEMM kernels (sgemm) run on the CUDA cores, not the tensor cores. ";
    const std::string cost = " The cost shown is the time these kernels take, of which tensor cores save most.";
    switch (arch) {
        case GpuArch::pre_volta:
            return {fmt::format("GPU{} predates tensor cores (compute capability below 7.0): fp32 is its fastest "
                                "matrix path. Mixed precision in fp16 with a GradScaler still halves the memory "
                                "traffic of activations; a GPU from Volta on runs these GEMMs several times faster.",
                                device),
                    kFp16Amp};
        case GpuArch::volta:
        case GpuArch::turing:
            return {these +
                        fmt::format("GPU{}'s tensor cores ({}) take fp16 only: TF32 and bf16 came with Ampere. Train "
                                    "in automatic mixed precision with fp16 and a GradScaler (it keeps small "
                                    "gradients from underflowing).",
                                    device, arch == GpuArch::volta ? "Volta, compute capability 7.0" : "Turing, 7.5") +
                        cost,
                    kFp16Amp};
        case GpuArch::ampere:
            return {these +
                        fmt::format("GPU{} (Ampere) runs them several times faster in TF32 (fp32's range, a "
                                    "10-bit mantissa: fine for training) or, with automatic mixed precision, in "
                                    "bf16 (no GradScaler needed) or fp16.",
                                    device) +
                        cost,
                    kTf32};
        case GpuArch::ada:
        case GpuArch::hopper:
        case GpuArch::blackwell:
            return {these +
                        fmt::format("GPU{} ({}) runs them several times faster in TF32 or, with automatic mixed "
                                    "precision, in bf16; its fp8 tensor cores go further for large GEMMs through "
                                    "NVIDIA's Transformer Engine (te.fp8_autocast) or torchao's float8 training.",
                                    device,
                                    arch == GpuArch::ada      ? "Ada, compute capability 8.9"
                                    : arch == GpuArch::hopper ? "Hopper"
                                                              : "Blackwell") +
                        cost,
                    kTf32};
        case GpuArch::amd:
        case GpuArch::unknown:
            break;
    }
    return {these +
                "On Ampere or newer GPUs, TF32 (fp32's range, a 10-bit mantissa) or automatic mixed precision in "
                "bf16 runs them several times faster; on Volta and Turing (no TF32, no bf16) use fp16 autocast "
                "with a GradScaler. The trace does not say which GPU it was (no deviceProperties)." +
                cost,
            kTf32 + "\n# on Volta/Turing instead:\n" + kFp16Amp};
}

void fp32_matmul(Context& c) {
    for (int device : c.a.devices) {
        const GpuStep g = c.a.mean_gpu(device);
        if (!c.worth(g.fp32_gemm_us)) continue;
        const GpuArch arch = c.a.arch(device);
        MatmulFix m = matmul_fix(arch, device);
        std::string model;
        for (const DeviceProperties& p : c.a.properties)
            if (p.id == device || (model.empty() && c.a.properties.size() == 1)) model = " (" + p.name + ")";
        Finding& f = c.add(
            "fp32_matmul", gpu_subject(device), g.fp32_gemm_us,
            fmt::format("GPU{}{} multiplies matrices in full fp32, without tensor cores ({:.0f} % of its GEMM time)",
                        device, model, g.gemm_us > 0 ? 100 * g.fp32_gemm_us / g.gemm_us : 100.0),
            std::move(m.fix));
        f.snippet = std::move(m.snippet);
        f.evidence.push_back(figure("profile.gemm_ms_per_step", g.gemm_us / 1000, "every GEMM kernel"));
    }
}

void comm_exposed(Context& c) {
    for (int device : c.a.devices) {
        const GpuStep g = c.a.mean_gpu(device);
        const double exposed = g.us[static_cast<std::size_t>(GpuSlice::communication)];
        if (!c.worth(exposed)) continue;
        Finding& f =
            c.add("comm_exposed", gpu_subject(device), exposed,
                  fmt::format("GPU{} communicates without computing ({:.0f} % of its {:.2f} ms of NCCL time is hidden "
                              "under compute)",
                              device, g.comm_us > 0 ? 100 * g.comm_hidden_us / g.comm_us : 0.0, g.comm_us / 1000),
                  "The gradients' all-reduce (DDP) or the shards' all-gather and reduce-scatter (FSDP) runs while "
                  "no kernel computes. DDP overlaps each bucket's all-reduce with the rest of the backward: smaller "
                  "buckets start sooner (bucket_cap_mb), gradient_as_bucket_view saves a copy; under gradient "
                  "accumulation, skip the all-reduce of all but the last micro-batch with no_sync(). FSDP: "
                  "forward_prefetch=True and backward_prefetch=BackwardPrefetch.BACKWARD_PRE.");
        f.snippet =
            "model = DDP(model, device_ids=[local_rank], bucket_cap_mb=25, gradient_as_bucket_view=True)\n"
            "with model.no_sync():            # every micro-batch but the last\n"
            "    loss.backward()";
        f.evidence.push_back(figure("profile.comm_ms_per_step", g.comm_us / 1000, "NCCL kernels, hidden or not"));
        f.evidence.push_back(figure("profile.comm_hidden_share", g.comm_us > 0 ? g.comm_hidden_us / g.comm_us : 0,
                                    "of the NCCL time, under compute"));
    }
}

void data_in_step(Context& c) {
    const double data = c.a.mean_host().us[static_cast<std::size_t>(HostPhase::data)];
    if (c.step_us <= 0 || data <= 0 || data <= c.o.data_wait_share * c.step_us) return;
    const unsigned gpus = static_cast<unsigned>(c.a.devices.size());
    const std::string waiting = "The training loop waits for its batches";
    diagnose::LoaderAdvice advice;
    if (c.a.loader == Analysis::Loader::workers) {
        // The trace says there are workers, not how many: the snippet keeps the count to the user.
        const unsigned cpus = c.o.cpus;
        const unsigned per_gpu = cpus ? std::max(1u, cpus / std::max(1u, gpus)) : 0;
        const std::string box =
            gpus ? fmt::format("{} cores for {} GPU(s)", cpus, gpus) : fmt::format("{} cores", cpus);
        const std::string more =
            per_gpu > 2 ? fmt::format(
                              " Raise num_workers (up to {} with {}: one core stays with the training "
                              "process), keep persistent_workers=True and prefetch_factor=4, and",
                              per_gpu - 1, box)
            : cpus ? fmt::format(" With {} there is no core left for more workers:", box)
                   : std::string(
                         " Raise num_workers (one per core, one core left for the training process), "
                         "keep persistent_workers=True and prefetch_factor=4, and");
        advice.fix = waiting + " although its DataLoader has worker processes: they do not keep up." + more +
                     " make each batch cheaper to prepare (augment on the GPU, cache decoded samples, decode at a "
                     "lower resolution).";
        advice.snippet = fmt::format(
            "loader = torch.utils.data.DataLoader(dataset, batch_size=..., shuffle=True,\n"
            "    num_workers={}, {}persistent_workers=True, prefetch_factor=4)",
            per_gpu > 2 ? std::to_string(per_gpu - 1) : std::string("..."), c.a.has_gpu ? "pin_memory=True, " : "");
    } else {
        advice = diagnose::loader_advice(waiting, 0, c.o.cpus ? c.o.cpus : 1, gpus, false, c.a.has_gpu);
    }
    Finding& f =
        c.add("data_in_step", "host", data,
              fmt::format("the DataLoader's __next__ takes {}", c.a.loader == Analysis::Loader::in_process
                                                                    ? "the training process's own time (num_workers=0)"
                                                                    : "time inside the step"),
              advice.fix, c.o.data_wait_warning_share);
    // The scale is input_bound's, not min_share's.
    f.evidence.front().threshold = fmt::format(
        "> {:g} % of the step: [thresholds] data_wait_percent, a warning from "
        "{:g} %",
        c.o.data_wait_share * 100, c.o.data_wait_warning_share * 100);
    f.snippet = advice.snippet;
}

}  // namespace

const std::vector<std::string>& profile_rule_ids() {
    static const std::vector<std::string> ids = {"launch_bound", "sync_in_step", "pageable_copy",
                                                 "fp32_matmul",  "comm_exposed", "data_in_step"};
    return ids;
}

std::vector<diagnose::Finding> judge_profile(const Analysis& a, const ProfileRuleOptions& o) {
    Context c{a, o, 0, 0, {}};
    c.steps = a.steps.size();
    if (c.steps == 0) return {};
    c.step_us = a.step_us() / static_cast<double>(c.steps);
    // Kernels replayed by CUPTI's range profiler take the time of their replays: the GPU's rules
    // would judge the profiler, not the run.
    if (a.range_profiler_kernels == 0) {
        launch_bound(c);
        sync_in_step(c);
        pageable_copy(c);
        fp32_matmul(c);
        comm_exposed(c);
    }
    data_in_step(c);
    std::stable_sort(c.out.begin(), c.out.end(),
                     [](const Judged& x, const Judged& y) { return x.cost_us > y.cost_us; });
    std::vector<Finding> out;
    for (Judged& j : c.out) out.push_back(std::move(j.finding));
    return out;
}

}  // namespace baton::profile
