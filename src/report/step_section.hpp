// The report's "Step" section (issue 33): a run's profiler window (`baton run --profile`), judged
// again from the trace the history keeps, as stacked bars per step (each GPU's time by what ran and
// why it idled, the host's by phase), the top kernels and where the host waited for the GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "profile/step_breakdown.hpp"
#include "store/history.hpp"

namespace baton::report {

struct StepSection {
    profile::Analysis analysis;
    int rank = 0;
    std::int64_t t_ms = 0;
    std::size_t windows = 0;  // windows kept with the run (the last is shown)
    std::string error;        // the kept trace could not be read (said in the section)
};

// The last window of `windows`, analysed; nullopt when the run has none.
std::optional<StepSection> step_section(const std::vector<store::RecordedProfile>& windows);

// The section as HTML (inline SVG, no script) and as Markdown.
void append_step_section_html(const StepSection& s, std::int64_t run_id, std::string& out);
void append_step_section_markdown(const StepSection& s, std::int64_t run_id, std::string& out);

}  // namespace baton::report
