// The report's "Memory" section (issue 34, docs/memory.md): the CUDA allocator's figures at each step's
// end (allocated, the step's peak, reserved) beside the GPU's own memory as NVML saw it, and, when the
// run ran out of memory, the breakdown of the GPU at the failure (a bar: what the allocated memory
// held, the reserve's unallocated part, other processes, free), the largest allocation sites, and the
// finding's advice. From the run's record only (the steps' figures and cuda_oom's evidence).
#pragma once

#include <string>

#include "store/history.hpp"

namespace baton::report {

// Whether the run has anything for the section: steps with allocator figures, or a cuda_oom.
bool has_memory_section(const store::StoredRun& d);

void append_memory_section_html(const store::StoredRun& d, std::string& out);
void append_memory_section_markdown(const store::StoredRun& d, std::string& out);

}  // namespace baton::report
