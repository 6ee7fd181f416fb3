// rank_straggler: in a job of several ranks, one rank (or its GPU) far from the others. Every
// synchronous step waits for the slowest rank, so one straggler sets the pace of the whole job.
// From the hook's steps per rank: a rank whose median step is far slower than the others' (ranks
// that do not synchronise every step), or whose data wait is far longer (its loader starves it and
// the others wait for it in their all-reduce, so their steps look as long). From the GPUs: one of
// a job's GPUs far less busy than the job's others (the others spin in NCCL waiting for it).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/percentile.hpp"
#include "diagnose/process_trees.hpp"
#include "diagnose/rules.hpp"

namespace baton::diagnose {

namespace {

constexpr std::size_t kMinRankSteps = 5;
// A data wait this share of the straggler's step longer than the others' is a starved loader.
constexpr double kWaitGapShare = 0.25;
// The job's other GPUs must be this busy for an idle one to stand out.
constexpr double kBusyGpuPercent = 60;

struct RankSteps {
    double step_median = 0, wait_median = 0, step_min = 0, step_max = 0;
    std::size_t count = 0;
};

double median_of_others(const std::map<int, RankSteps>& ranks, int skip, double RankSteps::*field) {
    std::vector<double> v;
    for (const auto& [r, s] : ranks)
        if (r != skip) v.push_back(s.*field);
    return percentile(v, 50);
}

std::string rank_recommendation() {
    return "Every synchronous step waits for the slowest rank. Compare that rank's machine and GPU with the "
           "others' (baton top on its node: throttling, a PCIe link below its maximum, another job on its GPU), "
           "its data loading (its shard on a slower disk, fewer DataLoader workers, uneven sample sizes: bucket by "
           "length), and work only it does (rank 0 logging or checkpointing synchronously: move it off the step).";
}

void straggler_by_steps(const Window& w, const Thresholds& t, const StepWindow& steps, std::vector<Finding>& out) {
    std::map<int, std::vector<const StepSample*>> by_rank;
    for (const StepSample& s : steps) by_rank[s.rank].push_back(&s);
    std::map<int, RankSteps> ranks;
    for (const auto& [rank, mine] : by_rank) {
        if (mine.size() < kMinRankSteps) continue;
        const double span_s = static_cast<double>(mine.back()->t_ms - mine.front()->t_ms) / 1000.0;
        if (span_s < t.sustained_share * t.window_seconds) continue;
        std::vector<double> step, wait;
        for (const StepSample* s : mine) {
            step.push_back(s->step_ms);
            wait.push_back(s->wait_ms);
        }
        RankSteps r;
        r.step_median = percentile(step, 50);
        r.wait_median = percentile(wait, 50);
        r.step_min = *std::min_element(step.begin(), step.end());
        r.step_max = *std::max_element(step.begin(), step.end());
        r.count = mine.size();
        ranks[rank] = r;
    }
    if (ranks.size() < 2) return;
    // The slowest rank, judged against the median of the others.
    int worst = -1;
    std::string why;
    double worst_gap = 0;
    for (const auto& [rank, r] : ranks) {
        const double others_step = median_of_others(ranks, rank, &RankSteps::step_median);
        const double others_wait = median_of_others(ranks, rank, &RankSteps::wait_median);
        if (others_step > 0 && r.step_median > t.rank_straggler_ratio * others_step &&
            r.step_median / others_step > worst_gap) {
            worst = rank;
            worst_gap = r.step_median / others_step;
            why = fmt::format("its median step takes {:.1f} ms, {:.1f} x the other ranks' {:.1f} ms", r.step_median,
                              worst_gap, others_step);
        } else if (worst < 0 && r.step_median > 0 && r.wait_median - others_wait > kWaitGapShare * r.step_median) {
            worst = rank;
            why = fmt::format(
                "it waits {:.1f} ms for each batch against the other ranks' {:.1f} ms (of a {:.1f} ms "
                "step): the others wait for it",
                r.wait_median, others_wait, r.step_median);
        }
    }
    if (worst < 0) return;
    Finding f = make_finding("rank_straggler", Severity::warning, fmt::format("rank:{}", worst),
                             fmt::format("rank {} is a straggler: {} (over {} ranks)", worst, why, ranks.size()),
                             rank_recommendation());
    for (const auto& [rank, r] : ranks) {  // the evidence: every rank's steps
        Evidence e;
        e.metric = fmt::format("steps.rank{}.step_time_ms", rank);
        e.average = r.step_median;  // the median, as the rule compares medians
        e.minimum = r.step_min;
        e.maximum = r.step_max;
        e.threshold = fmt::format("> {:g} x the other ranks' median", t.rank_straggler_ratio);
        e.samples = r.count;
        f.evidence.push_back(e);
        Evidence wait;
        wait.metric = fmt::format("steps.rank{}.data_wait_ms", rank);
        wait.average = r.wait_median;
        wait.samples = r.count;
        f.evidence.push_back(wait);
    }
    (void)w;
    out.push_back(std::move(f));
}

void straggler_by_gpus(const Window& w, const Thresholds& t, std::vector<Finding>& out) {
    const Snapshot& now = w.back();
    // The GPUs of each job (its compute processes' job root), in the newest snapshot.
    std::map<std::uint32_t, std::set<unsigned>> jobs;
    for (const GpuInfo& g : now.gpus)
        for (const GpuProcess& p : g.processes)
            if (p.type == GpuProcessType::compute) jobs[job_root(now, p.our_pid())].insert(g.index);
    for (const auto& [root, gpus] : jobs) {
        if (gpus.size() < 2) continue;
        std::map<unsigned, Series> util;
        for (unsigned index : gpus) {
            util[index] = series(
                w,
                [index](const Snapshot& s) -> std::optional<double> {
                    const GpuInfo* g = gpu_at(s, index);
                    return g && !g->stale && g->utilization_percent ? std::optional<double>(*g->utilization_percent)
                                                                    : std::nullopt;
                },
                [](double) { return false; });
            if (util[index].span() < t.sustained_share * t.window_seconds) util.erase(index);
        }
        if (util.size() < 2) continue;
        for (const auto& [index, s] : util) {
            std::vector<double> others;
            for (const auto& [i, o] : util)
                if (i != index) others.push_back(o.average);
            const double others_median = percentile(others, 50);
            if (others_median < kBusyGpuPercent || s.average >= others_median / t.rank_straggler_ratio) continue;
            Finding f = make_finding(
                "rank_straggler", Severity::warning, fmt::format("gpu:{}", index),
                fmt::format("GPU{} of a job on {} GPUs is {:.0f} % busy while the job's other GPUs are {:.0f} %: its "
                            "rank holds the others back",
                            index, util.size(), s.average, others_median),
                rank_recommendation());
            for (const auto& [i, o] : util)
                f.evidence.push_back(evidence(fmt::format("gpu{}.utilization_percent", i), o,
                                              fmt::format("< other GPUs' median / {:g}", t.rank_straggler_ratio)));
            out.push_back(std::move(f));
            break;  // one straggler per job: the least busy is named first
        }
    }
}

}  // namespace

void rank_rules(const Window& w, const Thresholds& t, const StepWindow& steps, std::vector<Finding>& out) {
    if (w.empty()) return;
    straggler_by_steps(w, t, steps, out);
    straggler_by_gpus(w, t, out);
}

}  // namespace baton::diagnose
