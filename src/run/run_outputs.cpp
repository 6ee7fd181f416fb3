#include "run/run_outputs.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/files.hpp"
#include "report/run_report.hpp"
#include "store/history.hpp"

namespace baton::run {

std::string write_run_outputs(const RunStats& stats, const std::string& db_path, const std::string& report,
                              const std::string& summary_json, std::string_view what) {
    std::string out;
    if (!report.empty()) {
        Status w = make_error(fmt::format("the {} was not recorded, so there is no report", what));
        if (stats.recording.run_id) {
            Result<store::History> h = store::History::open(db_path, store::HistoryAccess::read);
            w = h.ok() ? report::write_html_report(*h, stats.recording.run_id, report) : Status(h.error());
        }
        out += w.ok() ? "  report: " + report + "\n" : "  report: not written: " + w.error().message + "\n";
    }
    if (!summary_json.empty()) {
        if (Status w = write_file(summary_json, run_summary_json(stats)); !w.ok())
            out += "  summary JSON: not written: " + w.error().message + "\n";
    }
    return out;
}

}  // namespace baton::run
