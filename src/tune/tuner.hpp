// `baton tune -- CMD`: the user's own script run as trials. The first run (the script's own settings)
// warms the machine and shows what holds it back; the candidates that follows from it (candidates.hpp)
// and the script's own settings are then run in rounds, interleaved and each repeated, within the
// budget; a setting wins only beyond the measured noise (verdict.hpp), and one that changes the
// arithmetic only when the loss stayed the baseline's (numerics.hpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "run/run_command.hpp"
#include "tune/candidates.hpp"
#include "tune/numerics.hpp"
#include "tune/trial.hpp"
#include "tune/verdict.hpp"

namespace baton::tune {

struct TuneOptions {
    run::RunOptions run;  // the command and how to watch it (sampler, thresholds, history)
    double budget_seconds = 600;
    std::int64_t steps = 30;  // measured per trial, after its warm-up
    bool allow_batch_size = false;
    unsigned cpus = 1;                            // the CPUs the job may use
    std::string work_dir;                         // each trial's log, and the hook's stop file
    std::function<void(const std::string&)> say;  // a progress line (stderr)
};

// The smallest budget worth starting: the first run and two rounds of two settings.
inline constexpr int kMinimumTrials = 5;
// Rounds past this many tell little more about the noise: the budget is not spent on them.
inline constexpr std::int64_t kMostRounds = 6;

struct TuneResult {
    std::vector<Candidate> settings;  // [0]: the script's own ("your settings")
    std::vector<TrialResult> trials;  // in the order they ran; trials[0] is the first run
    Verdict verdict;
    std::vector<std::optional<NumericsCheck>> numerics;  // per setting, for those that change the arithmetic
    std::optional<std::size_t> winner;                   // after the numerics guard
    const char* measure = "steps/s";                     // or "samples/s" when a batch size was tried
    double seconds = 0;
    double budget_seconds = 0;
    std::string stopped;  // why tuning stopped before its plan (a stop signal), if it did
};

// Errors (one line each): the first run could not start, crashed, measured no step, or did not reach
// its steps within the budget; the budget holds fewer than kMinimumTrials trials of the script.
Result<TuneResult> tune(const TuneOptions& o);

// A trial's measure: samples/s when `samples` (and it has them), else steps/s.
std::optional<double> measure_of(const TrialResult& t, bool samples);

}  // namespace baton::tune
