// `baton report RUN`: a recorded run as a self-contained HTML page (charts over time, findings
// marked on them, the summary and the fixes) or as Markdown (the same facts, sparklines instead of
// charts) for a pull request or a lab notebook.
#pragma once

#include <string>
#include <vector>

#include "report/step_section.hpp"
#include "store/history.hpp"

namespace baton::report {

using RunReportData = store::StoredRun;  // the run as the history holds it

// One file: inline CSS and SVG, no script, and a Content-Security-Policy that forbids every
// request, so it opens the same offline, from a mail attachment or in a CI artefact viewer.
// `step`: the run's profiler window (baton run --profile), shown as the "Step" section when given.
std::string run_report_html(const report::RunReportData& d, const StepSection* step = nullptr);

std::string run_report_markdown(const report::RunReportData& d, const StepSection* step = nullptr);

// Run `run` of the history `h` as `baton report` shows it (HTML, or Markdown when `markdown`), with
// its profiler window's Step section when it has one.
Result<std::string> recorded_run_report(store::History& h, std::int64_t run, bool markdown);

// recorded_run_report() as HTML, written to `path` ("-": stdout).
Status write_html_report(store::History& h, std::int64_t run, const std::string& path);

}  // namespace baton::report
