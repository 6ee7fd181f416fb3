#include "measure/bench_need.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/percentile.hpp"
#include "core/units.hpp"
#include "store/history_runs.hpp"

namespace baton::measure {

Result<DiskNeed> need_from_flag(const std::string& text) {
    const std::optional<double> rate = parse_rate(text);
    if (!rate)
        return make_error(ErrorCode::invalid_argument,
                          "--need " + text + ": expected a rate such as 2GB/s, 500MB/s or 1.5GiB/s");
    return DiskNeed{rate, "--need " + text};
}

Result<DiskNeed> need_from_samples(std::int64_t run, const std::vector<store::RunSample>& samples) {
    std::vector<double> reads;
    for (const store::RunSample& s : samples)
        if (s.disk_read_bytes_per_second) reads.push_back(*s.disk_read_bytes_per_second);
    if (reads.empty())
        return make_error(
            ErrorCode::not_found,
            fmt::format("run {} recorded no disk reads (no samples, or recorded by an older baton)", run));
    const double p95 = percentile(reads, 95);
    if (p95 < 1)
        return make_error(ErrorCode::invalid_argument,
                          fmt::format("run {} read nothing from disk: nothing to measure against", run));
    return DiskNeed{p95, fmt::format("run {}: the p95 of its disk reads", run)};
}

Result<DiskNeed> disk_need(const std::string& need, const std::string& need_from_run,
                           const std::function<Result<store::History>()>& open_history) {
    if (!need.empty()) return need_from_flag(need);
    if (need_from_run.empty()) return DiskNeed{};
    Result<std::int64_t> id = store::parse_run_id(need_from_run);
    if (!id.ok()) return id.error();
    Result<store::History> h = open_history();
    if (!h.ok()) return h.error();
    if (Result<store::RunRecord> run = h->run_reads().run(*id); !run.ok()) return run.error();
    Result<std::vector<store::RunSample>> samples = h->run_reads().samples(*id);
    if (!samples.ok()) return samples.error();
    return need_from_samples(*id, *samples);
}

}  // namespace baton::measure
