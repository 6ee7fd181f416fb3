#include "report/run_figures.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/percentile.hpp"
#include "core/units.hpp"

namespace baton::report {

RunFigures run_figures(const store::RunRecord& r, const std::vector<store::RunSample>& samples,
                       const std::vector<store::RecordedFinding>& findings,
                       const std::vector<store::StepEvent>& steps) {
    RunFigures f;
    f.energy = store::run_energy_from_json(r.energy);
    if (!f.energy.empty()) f.energy_joules = f.energy.gpu_joules.value_or(0) + f.energy.cpu_joules.value_or(0);
    if (f.energy.joules_per_step) f.joules_per_step = *f.energy.joules_per_step;
    if (f.energy.joules_per_sample) f.joules_per_sample = *f.energy.joules_per_sample;
    if (!steps.empty()) {
        std::vector<double> ms;
        double total = 0, wait = 0, counted_ms = 0;
        std::int64_t counted = 0;
        for (const store::StepEvent& s : steps) {
            ms.push_back(s.step_ms);
            total += s.step_ms;
            wait += s.wait_ms;
            if (s.samples) {
                counted += *s.samples;
                counted_ms += s.step_ms;
            }
        }
        f.steps = steps.size();
        f.step_ms_median = percentile(ms, 50);
        f.step_ms_p95 = percentile(ms, 95);
        f.data_wait_percent = total > 0 ? 100.0 * wait / total : 0;
        // Per rank each step's samples are its own; ranks train side by side, so their rates add up.
        std::set<int> ranks;
        for (const store::StepEvent& s : steps) ranks.insert(s.rank);
        if (counted_ms > 0)
            f.samples_per_second =
                static_cast<double>(counted) * 1000.0 / counted_ms * static_cast<double>(ranks.size());
    }
    f.samples = samples.size();
    f.exit_status = r.exit_status.value_or(-1);
    if (r.end_ms)
        f.seconds = static_cast<double>(*r.end_ms - r.start_ms) / 1000.0;
    else if (!samples.empty())
        f.seconds = static_cast<double>(samples.back().t_ms - r.start_ms) / 1000.0;
    std::map<unsigned, std::vector<double>> util;  // per GPU
    std::map<unsigned, GpuFigures> gpus;
    std::map<unsigned, double> sm_sum;
    std::map<unsigned, std::size_t> sm_samples;
    std::vector<double> all_util;
    double read_sum = 0, write_sum = 0;
    std::size_t disk_samples = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const store::RunSample& s = samples[i];
        f.job_cpu_avg += s.job_cpu_percent;
        f.job_cpu_peak = std::max(f.job_cpu_peak, s.job_cpu_percent);
        f.job_rss_peak_gib = std::max(f.job_rss_peak_gib, s.job_rss_bytes / kBytesPerGiB);
        f.host_cpu_avg += s.cpu_percent;
        f.host_memory_peak_gib = std::max(f.host_memory_peak_gib, s.memory_used_bytes / kBytesPerGiB);
        f.iowait_avg += s.iowait_percent;
        // Swap traffic: the rate times the time to the previous sample (the rate's own window).
        if (i > 0)
            f.swap_mb +=
                s.swap_bytes_per_second / kBytesPerMB * static_cast<double>(s.t_ms - samples[i - 1].t_ms) / 1000.0;
        if (s.disk_read_bytes_per_second && s.disk_write_bytes_per_second) {
            const double read = *s.disk_read_bytes_per_second / kBytesPerMB,
                         write = *s.disk_write_bytes_per_second / kBytesPerMB;
            ++disk_samples;
            read_sum += read;
            write_sum += write;
            f.disk_read_peak = std::max(f.disk_read_peak, read);
            f.disk_write_peak = std::max(f.disk_write_peak, write);
        }
        for (const store::RunSample::Gpu& g : s.gpus) {
            GpuFigures& x = gpus[g.index];
            x.index = g.index;
            ++x.samples;
            util[g.index].push_back(g.utilization_percent);
            all_util.push_back(g.utilization_percent);
            x.memory_peak_gib = std::max(x.memory_peak_gib, g.memory_used_bytes / kBytesPerGiB);
            f.gpu_memory_peak_gib = std::max(f.gpu_memory_peak_gib, g.memory_used_bytes / kBytesPerGiB);
            if (g.sm_activity_percent) {
                sm_sum[g.index] += *g.sm_activity_percent;
                ++sm_samples[g.index];
            }
        }
    }
    if (!samples.empty()) {
        const auto n = static_cast<double>(samples.size());
        f.job_cpu_avg /= n;
        f.host_cpu_avg /= n;
        f.iowait_avg /= n;
    }
    if (disk_samples) {
        f.disk_read_avg = read_sum / static_cast<double>(disk_samples);
        f.disk_write_avg = write_sum / static_cast<double>(disk_samples);
    }
    if (!all_util.empty()) {
        double sum = 0;
        for (double u : all_util) sum += u;
        f.gpu_util_avg = sum / static_cast<double>(all_util.size());
        f.gpu_util_p95 = percentile(all_util, 95);
    }
    for (auto& [index, g] : gpus) {
        const std::vector<double>& u = util[index];
        double sum = 0;
        for (double v : u) sum += v;
        g.util_avg = sum / static_cast<double>(u.size());
        g.util_p95 = percentile(u, 95);
        if (sm_samples[index]) g.sm_avg = sm_sum[index] / static_cast<double>(sm_samples[index]);
        for (const store::RunGpu& m : r.gpus)
            if (m.index == index) {
                g.name = m.name;
                g.memory_total_gib = static_cast<double>(m.memory_total_bytes) / 1073741824.0;
            }
        f.gpus.push_back(g);
    }
    for (const store::RecordedFinding& x : findings) f.findings.insert(x.rule + " [" + x.subject + "]");
    return f;
}

std::string machine_text(const store::RunRecord& r) {
    if (!r.cpu_count) return "";
    std::string s = fmt::format("{} CPUs", *r.cpu_count);
    if (r.memory_total_bytes)
        s += fmt::format(", {:.1f} GiB memory", static_cast<double>(*r.memory_total_bytes) / 1073741824.0);
    auto gib = [](const store::RunGpu& g) { return static_cast<double>(g.memory_total_bytes) / 1073741824.0; };
    const bool alike = std::all_of(r.gpus.begin(), r.gpus.end(), [&](const store::RunGpu& g) {
        return g.name == r.gpus.front().name && g.memory_total_bytes == r.gpus.front().memory_total_bytes;
    });
    if (r.gpus.empty())
        s += "; no GPU";
    else if (alike)  // the usual box: one model throughout
        s += fmt::format("; {} x {} {:.1f} GiB", r.gpus.size(), r.gpus.front().name, gib(r.gpus.front()));
    else
        for (const store::RunGpu& g : r.gpus) s += fmt::format("; GPU{} {} {:.1f} GiB", g.index, g.name, gib(g));
    return s;
}

}  // namespace baton::report
