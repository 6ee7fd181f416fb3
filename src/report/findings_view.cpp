#include "report/findings_view.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "core/printable.hpp"
#include "diagnose/series.hpp"
#include "formats/finding_json.hpp"

namespace baton::report {

namespace {

std::string upper(const char* s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

std::string value_text(double v) {
    if (std::abs(v) >= 1e6) return fmt::format("{:.3g}", v);
    return fmt::format("{:.1f}", v);
}

std::string indicator_value(const diagnose::IndicatorSummary& s) {
    if (s.unit == "B/s") {
        if (s.value >= 1e6) return fmt::format("{:.1f} MB/s", s.value / 1e6);
        return fmt::format("{:.0f} kB/s", s.value / 1e3);
    }
    return fmt::format("{:.1f} %", s.value);
}

std::string indicator_name(const diagnose::IndicatorSummary& s) {
    if (s.indicator == "gpu_memory") {
        // "gpu:0" -> "GPU0", "gpu:0/mig:3" -> "GPU0 MIG GI 3"
        std::string name = "GPU" + s.subject.substr(4);
        if (const std::size_t mig = name.find("/mig:"); mig != std::string::npos)
            name = name.substr(0, mig) + " MIG GI " + name.substr(mig + 5);
        return name + " memory (peak)";
    }
    if (s.indicator == "cpu_load") return "CPU load";
    if (s.indicator == "swap_traffic") return "swap traffic";
    return "I/O wait";
}

std::string level_text(diagnose::Level l) {
    switch (l) {
        case diagnose::Level::low:
            return "below the best range: room to grow";
        case diagnose::Level::best:
            return "within the best range";
        case diagnose::Level::elevated:
            return "above the best range";
        case diagnose::Level::alarm:
            return "ALARM";
        case diagnose::Level::unknown:
            break;
    }
    return "unknown";
}

}  // namespace

int diagnosis_exit_status(const std::vector<diagnose::Finding>& findings) {
    int status = 0;
    for (const diagnose::Finding& f : findings) {
        if (f.severity == diagnose::Severity::critical) return 2;
        if (f.severity == diagnose::Severity::warning) status = 1;
    }
    return status;
}

DiagnosisInfo diagnosis_info(const std::vector<Snapshot>& w, std::string source) {
    DiagnosisInfo info;
    info.source = std::move(source);
    info.snapshots = w.size();
    info.hostname = w.back().host.hostname;
    info.start_unix_ms = w.front().time_unix_ms;
    info.end_unix_ms = w.back().time_unix_ms;
    info.seconds = diagnose::seconds(w.back()) - diagnose::seconds(w.front());
    info.gpus = static_cast<unsigned>(diagnose::gpu_indices(w).size());
    // A driver that hangs or fails (not a box without one) is said: its GPUs were not judged.
    const GpuState state = w.back().gpu_state;
    if (state != GpuState::ok && state != GpuState::not_read && !no_gpus_here(state))
        info.gpu_problem = w.back().gpu_status;
    return info;
}

void append_findings_text(const DiagnosisInfo& info, const std::vector<diagnose::Finding>& findings,
                          const std::vector<diagnose::IndicatorSummary>& indicators, std::string& out) {
    auto line = [&](const std::string& l) { out.append(l).push_back('\n'); };
    line(fmt::format("baton diagnose: {} snapshots over {:.0f} s on {} ({}), {} GPU{}", info.snapshots, info.seconds,
                     info.hostname, info.source, info.gpus, info.gpus == 1 ? "" : "s"));
    if (!info.gpu_problem.empty()) line("GPUs not judged: " + info.gpu_problem);
    line("");
    if (findings.empty()) {
        line("No findings.");
        line("");
    }
    for (const diagnose::Finding& f : findings) {
        // Subjects and summaries carry names from outside (a mount point, a process name): one line each.
        const std::string about = printable(f.job.empty() ? f.subject : f.subject + " " + f.job);
        line(fmt::format("{:<8}  {}  [{}]  {}", upper(severity_name(f.severity)), f.rule, about, printable(f.summary)));
        for (const diagnose::Evidence& e : f.evidence) {
            std::string share =
                e.breach_share ? fmt::format(", {:.0f} % of samples breach", 100 * *e.breach_share) : "";
            // What the evidence has, as the JSON has it: no minimum or maximum printed as 0.
            std::string values = e.average ? " avg " + value_text(*e.average) : "";
            if (e.minimum) values += " min " + value_text(*e.minimum);
            if (e.maximum) values += " max " + value_text(*e.maximum);
            line(fmt::format("          evidence: {}{} over {} samples (threshold {}{})", e.metric, values, e.samples,
                             e.threshold, share));
        }
        line("          fix: " + f.recommendation);
        if (f.snippet) {
            line("          paste:");
            std::string_view s = *f.snippet;
            while (!s.empty()) {
                const std::size_t nl = s.find('\n');
                line("            " + printable(s.substr(0, nl)));
                s = nl == std::string_view::npos ? std::string_view() : s.substr(nl + 1);
            }
        }
        line("          see: baton explain " + f.rule);
        line("");
    }
    if (!indicators.empty()) {
        line("Indicators:");
        for (const diagnose::IndicatorSummary& s : indicators)
            line(fmt::format("  {:<22} {:>10}   best {:<12} alarm {:<18} {}", indicator_name(s), indicator_value(s),
                             s.best, s.alarm, level_text(s.level)));
    }
    std::size_t critical = 0, warning = 0, info_count = 0;
    for (const diagnose::Finding& f : findings)
        (f.severity == diagnose::Severity::critical  ? critical
         : f.severity == diagnose::Severity::warning ? warning
                                                     : info_count) += 1;
    line("");
    if (critical + warning == 0)
        line(fmt::format("Verdict: nothing above info ({} info finding{}).", info_count, info_count == 1 ? "" : "s"));
    else
        line(fmt::format("Verdict: {} critical, {} warning{}, {} info.", critical, warning, warning == 1 ? "" : "s",
                         info_count));
}

void append_findings_json(const DiagnosisInfo& info, const std::vector<diagnose::Finding>& findings,
                          const std::vector<diagnose::IndicatorSummary>& indicators, std::string& out) {
    JsonWriter w(out);
    w.begin_object();
    w.field("schema_version", 1);
    w.key("window");
    w.begin_object();
    w.field("source", info.source);
    w.field("hostname", info.hostname);
    w.field("snapshots", static_cast<std::uint64_t>(info.snapshots));
    w.field("seconds", info.seconds);
    w.field("start", rfc3339_utc(info.start_unix_ms));
    w.field("end", rfc3339_utc(info.end_unix_ms));
    w.field("gpus", info.gpus);
    if (!info.gpu_problem.empty()) w.field("gpu_problem", info.gpu_problem);
    w.end_object();
    w.key("findings");
    w.begin_array();
    for (const diagnose::Finding& f : findings) formats::write_finding_json(w, f);
    w.end_array();
    w.key("indicators");
    w.begin_array();
    for (const diagnose::IndicatorSummary& s : indicators) {
        w.begin_object();
        w.field("indicator", s.indicator);
        w.field("subject", s.subject);
        w.field("value", s.value);
        w.field("unit", s.unit);
        w.field("best", s.best);
        w.field("alarm", s.alarm);
        w.field("level", level_name(s.level));
        w.end_object();
    }
    w.end_array();
    w.field("exit_status", diagnosis_exit_status(findings));
    w.end_object();
    w.finish();
}

}  // namespace baton::report
