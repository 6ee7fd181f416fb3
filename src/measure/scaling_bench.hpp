// `baton bench scaling --gpus 1,2,4,8 -- CMD ARGS`: the training run through `baton launch` at each
// size for a fixed time, its throughput read from the Python hook's steps (or from the ranks'
// output with --metric-regex), and the weak-scaling efficiency of each size: throughput_N over N x
// the throughput of one (of the smallest size, per GPU, when 1 is not in the list). A size whose
// efficiency falls under [bench] scaling_alarm, or that trains slower than a smaller one, is flagged:
// adding GPUs did not pay.
#pragma once

#include <atomic>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "measure/bench_report.hpp"
#include "core/result.hpp"
#include "store/history.hpp"

namespace baton::measure {

struct ScalingOptions {
    std::vector<int> sizes;                   // ranks per run, ascending
    std::vector<std::string> command;         // the training, as baton launch takes it
    std::vector<std::string> launch_args;     // passed to every baton launch (--python P, --no-gpus, -m, ...)
    std::string baton;                        // the baton binary that launches (this one)
    double seconds = 60;                      // each size trains this long, then is ended
    double warmup_seconds = 15;               // and what it does before this is not counted
    std::string metric_regex;                 // empty: the hook's steps
    double alarm = 0.7;                       // [bench] scaling_alarm
    std::string work_dir;                     // logs and the launches' history go here
    const std::atomic<bool>* stop = nullptr;  // set by a signal: end the launch in progress and stop
};

// Errors: the training failed at some size (its exit status and where its logs are), or reported
// no throughput.
Result<BenchReport> run_scaling_bench(const ScalingOptions& o);

// "1,2,4,8" -> {1, 2, 4, 8}: ascending, distinct, each 1 to 1024.
Result<std::vector<int>> parse_sizes(const std::string& text);

// The hook's steps of one launch -> its training throughput after `warmup_seconds` (from its first
// step): per rank, the samples of its steps after the warm-up over the time they span, summed over
// the ranks. Steps without a sample count count as one each (`by_samples` false: steps/s).
std::optional<double> steady_throughput(const std::vector<store::StepEvent>& steps, double warmup_seconds,
                                        bool& by_samples);

// The ranks' output -> the throughput the regex's first group reports (the whole match without
// a group): per rank the median of its values after the first `skip_share` of them, summed over
// the ranks that print it, scaled to `ranks` when only some print it (every rank runs the same
// loop). None when no line matches.
std::optional<double> regex_throughput(const std::vector<std::string>& rank_outputs, const std::regex& re,
                                       double skip_share, int ranks, std::string& note);

// One size's row: its throughput, and its efficiency and flags against the others.
struct ScalingRow {
    int ranks = 0;
    double throughput = 0;
    double ideal = 0;       // linear scaling from the smallest size
    double efficiency = 0;  // throughput / ideal
    bool slower = false;    // below a smaller size's throughput
    bool below_alarm = false;
};
std::vector<ScalingRow> scaling_rows(const std::vector<std::pair<int, double>>& throughputs, double alarm);

}  // namespace baton::measure
