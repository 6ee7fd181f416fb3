// One trial of `baton tune`: the user's own command run as it is, with one setting in its environment,
// watched like `baton run` (the same watch step: samples, the hook's events, the history), ended by the
// hook at a step once its warm-up and N measured steps are in, or at its deadline with its whole tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diagnose/finding.hpp"
#include "run/run_command.hpp"
#include "tune/candidates.hpp"
#include "tune/settings.hpp"
#include "tune/warmup.hpp"

namespace baton::tune {

enum class TrialEnd {
    measured,      // its warm-up and measured steps came, and it ended at a step
    short_script,  // the script ended by itself after its warm-up, with fewer measured steps
    crashed,       // it exited non-zero (or by a signal) before it had its steps
    deadline,      // it ran past its deadline and was ended with its tree
    no_steps,      // it ended without a step to measure (or a warm-up)
    not_started,   // the command could not be started
};

struct TrialResult {
    std::size_t setting = 0;  // which of the tried settings (0: the script's own)
    TrialEnd end = TrialEnd::no_steps;
    std::string why;               // for a trial that did not measure: what happened, with its last output line
    std::vector<TrialStep> steps;  // one rank's (the lowest that sent): what the warm-up and measure read
    std::optional<Warmup> warmup;
    TrialMeasure measure;
    double seconds = 0;                                  // wall time, start to end
    double cpu_percent = 0;                              // the job's average CPU (of one core)
    std::optional<double> gpu_utilization, sm_activity;  // averages over the job's GPUs
    std::uint64_t gpu_memory_peak = 0, gpu_memory_total = 0;
    store::RunEnergy energy;  // the GPUs' and CPU packages', per step over the trial's steps
    std::optional<LoaderFacts> loader;
    std::optional<ProcessFacts> process;
    std::vector<double> losses;               // the script's loss at each backward(), when asked for
    std::vector<diagnose::Finding> findings;  // its warnings and critical findings (what only code can change)
    std::int64_t run_id = 0;                  // in the history, when recorded

    bool counts() const { return end == TrialEnd::measured || end == TrialEnd::short_script; }
};

struct TrialOptions {
    run::RunOptions run;  // the command, sampler, thresholds, history (its name says the setting)
    Settings settings;
    std::int64_t steps = 30;  // measured after the warm-up
    double deadline_seconds = 0;
    bool record_losses = false;
    std::string log_path;   // the command's output goes here
    std::string stop_file;  // the hook's signal to end at a step
};

TrialResult run_trial(const TrialOptions& o);

// The hook's facts (python/baton/_tune.py's events), read key by key; none when malformed.
std::optional<LoaderFacts> loader_facts_of(const std::string& body);
std::optional<ProcessFacts> process_facts_of(const std::string& body);
std::optional<std::vector<double>> losses_of(const std::string& body);

}  // namespace baton::tune
