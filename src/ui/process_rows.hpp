// The process table's rows for a snapshot and a view: filtered, sorted, and in tree mode
// grouped under their parents with each group's totals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sample/snapshot.hpp"
#include "ui/view_state.hpp"

namespace baton::ui {

struct ProcessRow {
    const ProcessInfo* process = nullptr;
    std::optional<double> gpu_sm_percent;  // summed over the GPUs it runs on, when reported
    bool outside = false;                  // from `extra`: known to NVML only, no /proc figures
    // Tree mode only:
    std::string tree_prefix;             // "├─ ", "│  └─ ", ...
    bool has_children = false;           // among the rows shown
    double group_cpu_percent = 0;        // this process and its shown descendants
    std::uint64_t group_gpu_memory = 0;  // the same, GPU memory
};

// `extra`: processes to list besides the snapshot's (GPU processes outside this pid namespace).
std::vector<ProcessRow> process_rows(const Snapshot& s, const ViewState& v, const std::vector<ProcessInfo>& extra = {});

}  // namespace baton::ui
