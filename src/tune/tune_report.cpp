#include "tune/tune_report.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/json_writer.hpp"
#include "formats/finding_json.hpp"
#include "store/run_energy.hpp"

namespace baton::tune {

namespace {

std::string minutes(double seconds) {
    if (seconds < 90) return fmt::format("{:.0f} s", seconds);
    const auto s = static_cast<long long>(seconds + 0.5);
    return fmt::format("{} min {} s", s / 60, s % 60);
}

std::string percent(double share) {
    return fmt::format("{:+.1f} %", 100 * share);
}

// The trials of one setting that measured: their averages of what the table shows beside the measure.
struct Means {
    double samples = 0, wait = 0, cpu = 0, joules = 0;
    std::size_t n = 0, with_samples = 0, with_joules = 0;
};

Means means_of(const TuneResult& r, std::size_t setting) {
    Means m;
    for (std::size_t i = 1; i < r.trials.size(); ++i) {
        const TrialResult& t = r.trials[i];
        if (t.setting != setting || !t.counts()) continue;
        ++m.n;
        m.wait += t.measure.data_wait_share;
        m.cpu += t.cpu_percent;
        if (t.measure.samples_per_second) {
            m.samples += *t.measure.samples_per_second;
            ++m.with_samples;
        }
        if (t.energy.joules_per_step) {
            m.joules += *t.energy.joules_per_step;
            ++m.with_joules;
        }
    }
    if (m.n) {
        m.wait /= static_cast<double>(m.n);
        m.cpu /= static_cast<double>(m.n);
    }
    if (m.with_samples) m.samples /= static_cast<double>(m.with_samples);
    if (m.with_joules) m.joules /= static_cast<double>(m.with_joules);
    return m;
}

// "settings": {...}, the same object BATON_TUNE holds.
void settings_object(JsonWriter& w, const Settings& s) {
    const std::string text = to_json(s);  // "{...}"
    w.key("settings");
    w.begin_object();
    w.members(std::string_view(text).substr(1, text.size() - 2));
    w.end_object();
}

// What the first run found that no setting changes (a .item() each step, a dataset that decodes on the
// main thread, ...): advised with its fix, not tried.
template <typename Line>
void code_advice(const TuneResult& r, Line&& line) {
    if (r.trials.empty() || r.trials.front().findings.empty()) return;
    line("");
    line("what the first run found (advice for your code, not tried; baton explain RULE):");
    for (const diagnose::Finding& f : r.trials.front().findings) {
        line(fmt::format("  {} {} [{}]: {}", diagnose::severity_name(f.severity), f.rule, f.subject, f.summary));
        line("      fix: " + f.recommendation);
    }
}

}  // namespace

const char* end_name(TrialEnd e) {
    switch (e) {
        case TrialEnd::measured:
            return "measured";
        case TrialEnd::short_script:
            return "script_ended";
        case TrialEnd::crashed:
            return "crashed";
        case TrialEnd::deadline:
            return "deadline";
        case TrialEnd::no_steps:
            return "no_steps";
        case TrialEnd::not_started:
            return "not_started";
    }
    return "measured";
}

std::string tune_text(const TuneResult& r, const std::string& command) {
    std::string out;
    auto line = [&](const std::string& l) { out.append(l).push_back('\n'); };
    line(fmt::format("baton tune: {} trial{} in {} (budget {}), measured in {} after each warm-up", r.trials.size(),
                     r.trials.size() == 1 ? "" : "s", minutes(r.seconds), minutes(r.budget_seconds), r.measure));
    if (!r.stopped.empty()) line("  (" + r.stopped + ": the verdict is over the trials that ran)");
    if (r.settings.size() == 1) {
        line("");
        line(
            fmt::format("nothing to try: the first run waited for data {:.0f} % of the step, and nothing baton can "
                        "set without your code points at a faster setting",
                        100 * r.trials.front().measure.data_wait_share));
        code_advice(r, line);
        return out;
    }
    line("");
    line(fmt::format("  {:<48} {:>22} {:>10} {:>9} {:>6}  {}", "setting", std::string(r.measure) + " (min-max)",
                     "samples/s", "data wait", "CPU", "against yours"));
    for (std::size_t s = 0; s < r.settings.size(); ++s) {
        const SettingVerdict& v = r.verdict.settings[s];
        const Means m = means_of(r, s);
        std::string name = label(r.settings[s].settings);
        if (name.size() > 48) name = name.substr(0, 45) + "...";
        if (v.values.empty()) {
            line(fmt::format("  {:<48} {:>22}  {}", name, "-", v.why));
            continue;
        }
        const std::string measured = fmt::format("{:.1f} ({:.1f}-{:.1f})", v.median, v.low, v.high);
        const std::string samples = m.with_samples ? fmt::format("{:.0f}", m.samples) : "-";
        std::string verdict;
        if (s > 0) verdict = percent(v.gain) + (v.wins ? (r.winner == s ? "  wins" : "  beats yours") : "  " + v.why);
        std::string row =
            fmt::format("  {:<48} {:>22} {:>10} {:>7.0f} % {:>4.0f} %", name, measured, samples, 100 * m.wait, m.cpu);
        if (m.with_joules) row += "  " + store::joules_text(m.joules) + "/step";
        line(row + (verdict.empty() ? "" : "  " + verdict));
    }
    line("");
    line("why each was tried:");
    for (std::size_t s = 1; s < r.settings.size(); ++s)
        line("  " + label(r.settings[s].settings) + ": " + r.settings[s].reason);
    for (std::size_t s = 1; s < r.settings.size(); ++s)
        if (r.numerics[s])
            line("  " + label(r.settings[s].settings) + " changes the arithmetic: " + r.numerics[s]->why);
    code_advice(r, line);
    line("");
    const SettingVerdict& base = r.verdict.settings[0];
    if (!r.winner) {
        bool others_ran = false;
        for (std::size_t s = 1; s < r.settings.size(); ++s)
            others_ran = others_ran || !r.verdict.settings[s].values.empty();
        if (!others_ran)
            line("no other setting ran to the end: keep your settings");
        else if (base.values.size() < 2)
            line("nothing beats your settings beyond the noise");
        else
            line(fmt::format("nothing beats your settings beyond the noise (your own trials spread {:.1f} %)",
                             100 * base.spread));
        return out;
    }
    const SettingVerdict& w = r.verdict.settings[*r.winner];
    const Settings& ws = r.settings[*r.winner].settings;
    line(fmt::format("winner: {}: {} {} (its trials {:.1f} to {:.1f}, yours {:.1f} to {:.1f})", label(ws),
                     percent(w.gain), r.measure, w.low, w.high, base.low, base.high));
    line("keep it with no change to the script:");
    line("    baton run --tuned -- " + command);
    line("or put it in the script:");
    for (const std::string& l : paste_lines(ws)) line("    " + l);
    return out;
}

std::string tune_json(const TuneResult& r, const std::string& command) {
    std::string out;
    {
        JsonWriter w(out);
        w.begin_object();
        w.field("command", command);
        w.field("seconds", r.seconds);
        w.field("budget_seconds", r.budget_seconds);
        w.field("measure", r.measure);
        if (!r.stopped.empty()) w.field("stopped", r.stopped);
        w.key("settings");
        w.begin_array();
        for (std::size_t s = 0; s < r.settings.size(); ++s) {
            const SettingVerdict& v = r.verdict.settings[s];
            w.begin_object();
            w.field("label", label(r.settings[s].settings));
            settings_object(w, r.settings[s].settings);
            w.field("reason", r.settings[s].reason);
            w.key("values");
            w.begin_array();
            for (double x : v.values) w.value(x);
            w.end_array();
            if (!v.values.empty()) {
                w.field("median", v.median);
                w.field("low", v.low);
                w.field("high", v.high);
                w.field("spread", v.spread);
            }
            if (s > 0) {
                w.field("gain", v.gain);
                w.field("wins", v.wins);
                if (!v.why.empty()) w.field("why", v.why);
            }
            if (s < r.numerics.size() && r.numerics[s]) {
                w.key("numerics");
                w.begin_object();
                w.field("same", r.numerics[s]->same);
                w.field("why", r.numerics[s]->why);
                w.end_object();
            }
            w.end_object();
        }
        w.end_array();
        w.key("first_run_findings");
        w.begin_array();
        if (!r.trials.empty())
            for (const diagnose::Finding& f : r.trials.front().findings) formats::write_finding_json(w, f);
        w.end_array();
        w.key("trials");
        w.begin_array();
        for (const TrialResult& t : r.trials) {
            w.begin_object();
            w.field("setting", static_cast<std::uint64_t>(t.setting));
            w.field("end", end_name(t.end));
            if (!t.why.empty()) w.field("why", t.why);
            w.field("seconds", t.seconds);
            w.field("steps", static_cast<std::uint64_t>(t.steps.size()));
            if (t.warmup) {
                w.field("warmup_steps", static_cast<std::uint64_t>(t.warmup->first));
                w.field("settled", t.warmup->settled);
            }
            if (t.counts()) {
                w.field("measured_steps", static_cast<std::uint64_t>(t.measure.steps));
                w.field("steps_per_second", t.measure.steps_per_second);
                w.optional_field("samples_per_second", t.measure.samples_per_second);
                w.field("data_wait_share", t.measure.data_wait_share);
                w.field("median_step_ms", t.measure.median_step_ms);
            }
            w.field("cpu_percent", t.cpu_percent);
            w.optional_field("gpu_utilization_percent", t.gpu_utilization);
            w.optional_field("sm_activity_percent", t.sm_activity);
            if (t.gpu_memory_total) w.field("gpu_memory_peak_bytes", t.gpu_memory_peak);
            w.optional_field("joules_per_step", t.energy.joules_per_step);
            w.optional_field("joules_per_sample", t.energy.joules_per_sample);
            if (t.run_id) w.field("run", t.run_id);
            w.end_object();
        }
        w.end_array();
        if (r.winner) {
            const Settings& ws = r.settings[*r.winner].settings;
            w.key("winner");
            w.begin_object();
            w.field("label", label(ws));
            settings_object(w, ws);
            w.field("gain", r.verdict.settings[*r.winner].gain);
            w.key("paste");
            w.begin_array();
            for (const std::string& l : paste_lines(ws)) w.value(l);
            w.end_array();
            w.end_object();
        } else {
            w.key("winner");
            w.null();
        }
        w.end_object();
    }
    out.push_back('\n');
    return out;
}

}  // namespace baton::tune
