#include "tune/tuner.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "run/watch_step.hpp"
#include "store/run_energy.hpp"

namespace baton::tune {

namespace {

std::string duration_text(double seconds) {
    if (seconds < 90) return fmt::format("{:.0f} s", seconds);
    return fmt::format("{:.0f} min", std::ceil(seconds / 60));
}

std::string trial_line(const TrialResult& t, const Candidate& c, std::size_t n, std::size_t of) {
    std::string line = fmt::format("baton tune: trial {}/{}: {}: ", n, of, label(c.settings));
    if (!t.counts()) return line + t.why;
    line += fmt::format("{:.1f} steps/s", t.measure.steps_per_second);
    if (t.measure.samples_per_second) line += fmt::format(", {:.0f} samples/s", *t.measure.samples_per_second);
    line += fmt::format(", data wait {:.0f} %", 100 * t.measure.data_wait_share);
    if (t.energy.joules_per_step) line += ", " + store::joules_text(*t.energy.joules_per_step) + " per step";
    if (t.warmup && !t.warmup->settled) line += " (its step times never settled)";
    return line;
}

}  // namespace

std::optional<double> measure_of(const TrialResult& t, bool samples) {
    if (!t.counts()) return std::nullopt;
    if (samples) return t.measure.samples_per_second;
    return t.measure.steps_per_second;
}

namespace {

// Why the first run cannot be the baseline: not started, stopped, past the budget, crashed, no steps.
Status first_run_usable(const TrialResult& first, const TuneOptions& o) {
    if (first.end == TrialEnd::not_started) return make_error("cannot start the command: " + first.why);
    if (run::stop_signal_received()) return make_error("stopped by a signal during the first run");
    if (first.end == TrialEnd::deadline)
        return make_error(
            fmt::format("the first run did not reach {} steps after its warm-up within --budget {} "
                        "({} step(s)): give a larger --budget or fewer --steps",
                        o.steps, duration_text(o.budget_seconds), first.steps.size()));
    if (first.end == TrialEnd::crashed) return make_error("the script failed in its first run: it " + first.why);
    if (first.end == TrialEnd::no_steps) return make_error("nothing to tune: " + first.why);
    return Ok{};
}

// What the first run says about the job, for the candidates.
BaselineFacts baseline_facts(const TrialResult& first, const TuneOptions& o) {
    BaselineFacts facts;
    facts.loader = first.loader;
    facts.process = first.process;
    facts.data_wait_share = first.measure.data_wait_share;
    facts.cpus = o.cpus;
    facts.cpu_busy_share = first.cpu_percent / (100.0 * std::max(1u, o.cpus));
    if (first.gpu_memory_total)
        facts.gpu_memory_peak_share =
            static_cast<double>(first.gpu_memory_peak) / static_cast<double>(first.gpu_memory_total);
    facts.trial_steps = o.steps;
    facts.allow_batch_size = o.allow_batch_size;
    return facts;
}

// The verdict over every trial after the first (`samples`: by samples/s, else steps/s): each
// setting's win beyond the noise, refused when it changed the loss, the winner (of those within the
// noise of the best, the one that changes least), and why a setting whose trials failed has none.
void judge_trials(TuneResult& out, bool samples) {
    const std::size_t k = out.settings.size();
    std::vector<std::vector<double>> values(k);
    std::vector<std::vector<std::vector<double>>> losses(k);
    for (std::size_t i = 1; i < out.trials.size(); ++i) {
        const TrialResult& t = out.trials[i];
        if (std::optional<double> v = measure_of(t, samples)) {
            values[t.setting].push_back(*v);
            losses[t.setting].push_back(t.losses);
        }
    }
    out.verdict = judge(values);
    out.numerics.assign(k, std::nullopt);
    for (std::size_t s = 1; s < k; ++s) {
        if (!changes_numerics(out.settings[s].settings) || values[s].empty()) continue;
        out.numerics[s] = compare_losses(losses[0], losses[s]);
        if (!out.numerics[s]->same && out.verdict.settings[s].wins) {
            out.verdict.settings[s].wins = false;
            out.verdict.settings[s].why = "refused: " + out.numerics[s]->why;
        }
    }
    for (std::size_t s = 1; s < k; ++s)
        if (out.verdict.settings[s].wins &&
            (!out.winner || out.verdict.settings[s].median > out.verdict.settings[*out.winner].median))
            out.winner = s;
    // Of the winners within the noise of the best, the one that changes least: a setting that changes
    // one thing more for no measurable gain is not worth it.
    if (out.winner) {
        const SettingVerdict& best = out.verdict.settings[*out.winner];
        for (std::size_t s = 1; s < k; ++s) {
            const SettingVerdict& v = out.verdict.settings[s];
            const double noise = std::max(best.spread, v.spread);
            if (v.wins && v.median >= best.median * (1 - noise) &&
                changed_count(out.settings[s].settings) < changed_count(out.settings[*out.winner].settings))
                out.winner = s;
        }
    }
    out.verdict.winner = out.winner;
    // A setting whose trials failed says why in the table.
    for (std::size_t s = 1; s < k; ++s)
        if (values[s].empty())
            for (const TrialResult& t : out.trials)
                if (t.setting == s && !t.counts()) {
                    out.verdict.settings[s].why = "its trial " + t.why;  // (tried once: it is not tried again)
                    break;
                }
}

}  // namespace

Result<TuneResult> tune(const TuneOptions& o) {
    TuneResult out;
    out.budget_seconds = o.budget_seconds;
    const double start = monotonic_seconds();
    auto elapsed = [&] { return monotonic_seconds() - start; };
    auto say = [&](const std::string& line) {
        if (o.say) o.say(line);
    };
    std::size_t trial_number = 0;
    auto trial = [&](std::size_t setting, double deadline, std::size_t planned) {
        TrialOptions t;
        t.run = o.run;
        t.run.name = o.run.name + " [tune: " + label(out.settings[setting].settings) + "]";
        t.settings = out.settings[setting].settings;
        t.steps = o.steps;
        t.deadline_seconds = deadline;
        t.record_losses = true;
        ++trial_number;
        t.log_path = o.work_dir + fmt::format("/trial-{}.log", trial_number);
        t.stop_file = o.work_dir + "/stop";
        TrialResult r = run_trial(t);
        r.setting = setting;
        say(trial_line(r, out.settings[setting], trial_number, planned));
        return r;
    };

    // The first run: the script's own settings, which tell what to try. It may take the whole budget.
    out.settings.push_back({Settings{}, "the script's own"});
    say(fmt::format("baton tune: {}: the first run, with your settings ({} steps after the warm-up)", o.run.name,
                    o.steps));
    out.trials.push_back(trial(0, o.budget_seconds, 1));
    const TrialResult& first = out.trials.front();
    if (Status st = first_run_usable(first, o); !st.ok()) return st.error();
    const double trial_seconds = std::max(first.seconds, 0.1);

    std::vector<Candidate> tried = candidates(baseline_facts(first, o));
    // Two rounds of the script's own settings and each candidate must fit what is left.
    const double left = o.budget_seconds - elapsed();
    const auto fits = static_cast<std::int64_t>(left / (2 * trial_seconds)) - 1;
    if (!tried.empty() && fits < 1)
        return make_error(
            fmt::format("--budget {} is too small: a run of this script takes about {}, and tuning needs "
                        "at least {} (the first run, then your settings and one other twice each): "
                        "give --budget {} or more, or fewer --steps",
                        duration_text(o.budget_seconds), duration_text(trial_seconds), kMinimumTrials,
                        duration_text(kMinimumTrials * trial_seconds * 1.2)));
    if (static_cast<std::int64_t>(tried.size()) > fits)
        tried.resize(static_cast<std::size_t>(std::max<std::int64_t>(0, fits)));
    for (Candidate& c : tried) out.settings.push_back(std::move(c));
    const std::size_t k = out.settings.size();
    bool samples = false;
    for (const Candidate& c : out.settings) samples = samples || changes_optimisation(c.settings);
    out.measure = samples ? "samples/s" : "steps/s";
    if (k == 1) {
        out.verdict = judge({{}});
        out.numerics.assign(1, std::nullopt);
        out.seconds = elapsed();
        return out;
    }
    // Repetitions past a handful tell little more about the noise: at most kMostRounds.
    const auto rounds = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(left / (static_cast<double>(k) * trial_seconds)), 2, kMostRounds);
    const std::size_t planned = 1 + static_cast<std::size_t>(rounds) * k;
    std::vector<bool> broken(k, false);  // a setting whose trial crashed or hung is not tried again
    for (std::int64_t round = 0; round < rounds && out.stopped.empty(); ++round) {
        for (std::size_t i = 0; i < k; ++i) {
            const std::size_t setting = (i + static_cast<std::size_t>(round)) % k;  // each round starts elsewhere
            if (broken[setting]) continue;
            if (std::count(broken.begin(), broken.end(), false) < 2) {
                out.stopped = "every other setting failed";
                break;
            }
            const double remaining = o.budget_seconds * 1.1 - elapsed();
            if (remaining < trial_seconds) {
                out.stopped = "the budget ran out";
                break;
            }
            out.trials.push_back(trial(setting, std::min(remaining, 3 * trial_seconds + 10), planned));
            const TrialResult& t = out.trials.back();
            if (run::stop_signal_received()) {
                out.stopped = "stopped by a signal";
                break;
            }
            if (!t.counts() && setting != 0) broken[setting] = true;
        }
    }
    judge_trials(out, samples);
    out.seconds = elapsed();
    return out;
}

}  // namespace baton::tune
