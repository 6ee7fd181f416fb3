#include "report/runs_view.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "core/printable.hpp"
#include "report/run_figures.hpp"
#include "report/snapshot_text.hpp"
#include "store/run_json.hpp"

namespace baton::report {

namespace {

std::string run_row(const store::RunRecord& r) {
    const double seconds = r.end_ms ? static_cast<double>(*r.end_ms - r.start_ms) / 1000.0 : -1;
    return fmt::format("{:>4}  {:<5}  {:<11}  {:<20}  {:>9}  {:>4}  {:>7}  {:>8}  {}\n", r.id,
                       store::run_kind_name(r.kind), store::run_state_name(r.state),
                       rfc3339_utc(r.start_ms).substr(0, 19), seconds >= 0 ? fmt::format("{:.1f} s", seconds) : "-",
                       r.exit_status ? std::to_string(*r.exit_status) : "-", r.samples, r.findings, r.name);
}

}  // namespace

std::string runs_table(const std::vector<store::RunRecord>& runs) {
    std::string out = fmt::format("{:>4}  {:<5}  {:<11}  {:<20}  {:>9}  {:>4}  {:>7}  {:>8}  {}\n", "ID", "KIND",
                                  "STATE", "STARTED (UTC)", "DURATION", "EXIT", "SAMPLES", "FINDINGS", "NAME");
    for (const store::RunRecord& r : runs) out += run_row(r);
    return out;
}

std::string runs_jsonl(const std::vector<store::RunRecord>& runs) {
    std::string out;
    for (const store::RunRecord& r : runs) {
        append_run_json(r, out);
        out.push_back('\n');
    }
    return out;
}

std::string run_text(const store::RunRecord& run, const std::vector<store::RecordedFinding>& findings,
                     const std::vector<store::RecordedHang>& hangs) {
    std::string out = runs_table({run});
    out += fmt::format("command: {}\ncwd: {}\nhost: {}\n", run.command, run.cwd, run.host);
    if (run.cpu_count) out += "machine: " + machine_text(run) + "\n";
    for (const store::RecordedFinding& f : findings)
        out += fmt::format("{} {} {} [{}]: {}\n", rfc3339_utc(f.t_ms).substr(11, 8), f.severity, f.rule, f.subject,
                           f.summary);
    if (!hangs.empty()) {
        // The last verdict said, whole: where each rank was (the earlier ones are in --json).
        const store::RecordedHang& h = hangs.back();
        out += fmt::format("\nhang verdict at {}{}:\n{}", rfc3339_utc(h.t_ms).substr(11, 8),
                           hangs.size() > 1 ? fmt::format(" (the last of {})", hangs.size()) : std::string(),
                           printable_text(h.text));
        if (!out.empty() && out.back() != '\n') out += "\n";
    }
    if (!run.summary.empty()) out += "\n" + run.summary;
    return out;
}

std::string run_json(const store::RunRecord& run, const std::vector<store::RecordedFinding>& findings,
                     const std::vector<store::RecordedHang>& hangs) {
    std::string out;
    store::append_run_json(run, out, &findings, &hangs);
    return out + "\n";
}

std::string prune_text(const PruneOutcome& o) {
    const std::size_t n = o.runs.size();
    std::string out = fmt::format("{} {} run{}", o.dry_run ? "would prune" : "pruned", n, n == 1 ? "" : "s");
    if (n) {
        out += ":";
        for (const store::RunRecord& r : o.runs) out += fmt::format(" {}", r.id);
    }
    if (!o.dry_run && n) out += fmt::format(", {} freed", human_bytes(static_cast<double>(o.bytes_freed)));
    out += "\n";
    if (!o.note.empty()) out += "space not given back: " + o.note + "\n";
    return out;
}

std::string prune_json(const PruneOutcome& o) {
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    w.field("dry_run", o.dry_run);
    w.key("runs");
    w.begin_array();
    for (const store::RunRecord& r : o.runs) w.value(r.id);
    w.end_array();
    if (!o.dry_run) w.field("bytes_freed", o.bytes_freed);
    if (!o.note.empty()) w.field("error", o.note);
    w.end_object();
    w.finish();
    out.push_back('\n');
    return out;
}

}  // namespace baton::report
