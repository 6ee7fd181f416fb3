// disk_space_low: a filesystem a job writes to (its working directory or files open for writing:
// Snapshot::filesystems[].writer_pids) that is nearly full, or filling fast enough to be full soon
// (the sampler's fill rate over up to six hours, with the steps checkpoints make). The classic
// "the run died at the checkpoint save", said before it happens. docs/findings.md.
#include <algorithm>
#include <set>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/printable.hpp"
#include "core/units.hpp"
#include "diagnose/finding_jobs.hpp"
#include "diagnose/rules.hpp"
#include "sample/process_lookup.hpp"

namespace baton::diagnose {

namespace {

std::string minutes_text(double seconds) {
    if (seconds < 90) return fmt::format("{:.0f} s", seconds);
    if (seconds < 5400) return fmt::format("{:.0f} min", seconds / 60);
    return fmt::format("{:.1f} h", seconds / 3600);
}

}  // namespace

void disk_space_low(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    const Snapshot& last = w.back();
    for (const FilesystemStats& f : last.filesystems) {
        if (f.writer_pids.empty() || f.readonly || f.error || !f.size_bytes || !f.avail_bytes || *f.size_bytes == 0)
            continue;
        const double size = static_cast<double>(*f.size_bytes), avail = static_cast<double>(*f.avail_bytes);
        const double avail_percent = 100.0 * avail / size;
        const std::optional<double> to_full = f.fill_bytes_per_second && *f.fill_bytes_per_second > 0
                                                  ? std::optional<double>(avail / *f.fill_bytes_per_second)
                                                  : std::nullopt;
        const bool low = avail_percent < t.disk_free_percent;
        const bool filling = t.disk_full_minutes > 0 && to_full && *to_full < t.disk_full_minutes * 60;
        if (!low && !filling) continue;
        const bool critical =
            avail_percent < t.disk_free_percent / 5 || (filling && *to_full < t.disk_full_minutes * 60 / 4);
        std::string summary;
        if (filling && f.step_bytes && f.step_interval_seconds)
            summary = fmt::format("writes of {} every {} fill {}: {} left, full in about {}",
                                  format_size(*f.step_bytes), minutes_text(*f.step_interval_seconds), f.mount_point,
                                  format_size(*f.avail_bytes), minutes_text(*to_full));
        else if (filling)
            summary =
                fmt::format("{} fills at {}: {} left, full in about {}", f.mount_point,
                            format_rate(*f.fill_bytes_per_second), format_size(*f.avail_bytes), minutes_text(*to_full));
        else
            summary = fmt::format("{} has {} left ({:.1f} % of {})", f.mount_point, format_size(*f.avail_bytes),
                                  avail_percent, format_size(*f.size_bytes));
        // Whose writes: the first writer named, and how many more.
        const ProcessInfo* p = find_process(last, f.writer_pids.front());
        summary += fmt::format("; written by pid {}{}{}", f.writer_pids.front(), p ? " (" + p->name + ")" : "",
                               f.writer_pids.size() > 1 ? fmt::format(" and {} more", f.writer_pids.size() - 1) : "");
        Finding x = make_finding(
            "disk_space_low", critical ? Severity::critical : Severity::warning, "fs:" + f.mount_point, summary,
            "A training job that cannot write its checkpoint dies, often after hours of work. Free space before it "
            "does: delete old checkpoints (keep the last few: save to a rotating name), move the output to a "
            "larger filesystem, or save less often.");
        // The mount point quoted as the shell reads it back, on one line (a space, a quote or a newline
        // in it would otherwise give another command).
        x.snippet = fmt::format("du -xh --max-depth=2 {} | sort -h | tail", sh_quoted_line(f.mount_point));
        // The jobs behind the writers.
        std::set<std::string> jobs;
        for (std::uint32_t pid : f.writer_pids) {
            const std::string j = job_of_subject(last, "pid:" + std::to_string(pid));
            if (!j.empty()) jobs.insert(j);
        }
        for (const std::string& j : jobs) x.job += (x.job.empty() ? "" : ",") + j;
        const std::string mount = f.mount_point;
        Series s = series(
            w,
            [&](const Snapshot& snap) -> std::optional<double> {
                for (const FilesystemStats& g : snap.filesystems)
                    if (g.mount_point == mount && g.avail_bytes && g.size_bytes && *g.size_bytes)
                        return 100.0 * static_cast<double>(*g.avail_bytes) / static_cast<double>(*g.size_bytes);
                return std::nullopt;
            },
            [&](double v) { return v < t.disk_free_percent; });
        x.evidence.push_back(evidence("filesystem.avail_percent", s, fmt::format("< {:g}", t.disk_free_percent)));
        if (to_full) {
            Evidence e;
            e.metric = "filesystem.fill_bytes_per_second";
            e.average = f.fill_bytes_per_second;
            e.threshold = fmt::format("full within {:g} min", t.disk_full_minutes);
            e.samples = 1;
            x.evidence.push_back(e);
        }
        out.push_back(std::move(x));
    }
}

}  // namespace baton::diagnose
