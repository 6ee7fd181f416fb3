#include "cli/cmd_compare.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "cli/cli_common.hpp"
#include "report/compare_view.hpp"
#include "store/history.hpp"
#include "store/history_runs.hpp"
#include "store/history_bench.hpp"

namespace baton::cli {

CLI::App* add_compare_command(CLI::App& app, CompareArgs& a) {
    CLI::App* cmd = app.add_subcommand("compare", "Two recorded runs (or two benches) side by side: what changed");
    cmd->add_option("run_a", a.a, "The first run's id")->required();
    cmd->add_option("run_b", a.b, "The second run's id")->required();
    cmd->add_flag("--json", a.json, "One JSON object: both runs, the figures with their changes, the findings matched");
    cmd->add_option("--db", a.db,
                    "History database (default: [history] db in the config, else $XDG_STATE_HOME/baton/baton.db)");
    return cmd;
}

int run_compare(const CompareArgs& a, const std::string& config_path) {
    Result<store::History> h = open_history(a.db, config_path);
    if (!h.ok()) return runtime_error(h.error().message);
    Result<std::int64_t> ia = store::parse_run_id(a.a);
    if (!ia.ok()) return runtime_error(ia.error().message);
    Result<std::int64_t> ib = store::parse_run_id(a.b);
    if (!ib.ok()) return runtime_error(ib.error().message);
    Result<store::StoredRun> da = h->run_reads().load_run(*ia);
    if (!da.ok()) return runtime_error(da.error().message);
    Result<store::StoredRun> db = h->run_reads().load_run(*ib);
    if (!db.ok()) return runtime_error(db.error().message);
    const store::RunRecord& ra = da->run;
    const store::RunRecord& rb = db->run;
    if (ra.kind != rb.kind)
        return runtime_error(fmt::format("run {} is a {} and run {} a {}: only two runs or two benches compare", ra.id,
                                         store::run_kind_name(ra.kind), rb.id, run_kind_name(rb.kind)));
    if (ra.kind != store::RunKind::bench) {
        // Profiled runs (baton run --profile): their windows' steps too.
        auto window = [&](std::int64_t id) -> std::optional<report::StepSection> {
            Result<std::vector<store::RecordedProfile>> w = h->run_reads().profiles(id);
            return w.ok() ? report::step_section(*w) : std::nullopt;
        };
        const std::optional<report::StepSection> sa = window(ra.id), sb = window(rb.id);
        const report::StepSection* pa = sa ? &*sa : nullptr;
        const report::StepSection* pb = sb ? &*sb : nullptr;
        return write_stdout(a.json ? report::compare_runs_json(*da, *db, pa, pb)
                                   : report::compare_runs_text(*da, *db, pa, pb))
                   ? kExitOk
                   : kExitFailure;
    }
    Result<std::vector<store::BenchLinkRecord>> la = h->bench_table().bench_links(ra.id);
    if (!la.ok()) return runtime_error(la.error().message);
    Result<std::vector<store::BenchLinkRecord>> lb = h->bench_table().bench_links(rb.id);
    if (!lb.ok()) return runtime_error(lb.error().message);
    const std::string out =
        a.json ? report::compare_benches_json(ra, rb, *la, *lb) : report::compare_benches_text(ra, rb, *la, *lb);
    return write_stdout(out) ? kExitOk : kExitFailure;
}

}  // namespace baton::cli
