// The agent's diagnosis window: the snapshots of the last window_seconds, judged by the same
// diagnose() as baton diagnose. Only the newest is kept whole; in the older ones the agent keeps
// the processes the rules read across a window, which on a box with hundreds of idle daemons is a
// few dozen instead of hundreds (30 copies of 500 processes were 4.5 MB, most of the agent's heap):
//   - GPU processes and all their descendants (input_bound's pipeline, gpu_idle_held's CPU series);
//   - every process that used CPU in that sample (or whose CPU is not known yet), or read or wrote
//     (the host findings name who made a load: diagnose/host_load.hpp; memory's holders are read
//     from the newest snapshot alone).
// Command lines and cgroups are dropped from every copy: no rule reads them. A process that turns
// into a GPU process mid-window while it and its workers sat idle is judged from then on; nothing
// else differs, and tests/serve/diagnosis_window_test.cpp checks that the findings and indicators are
// the same, word for word, as over whole snapshots on every scenario of the diagnosis corpus.
#pragma once

#include <vector>

#include "diagnose/series.hpp"
#include "sample/snapshot.hpp"

namespace baton::serve {

class DiagnosisWindow {
  public:
    // Adds the newest snapshot (copied), trims the one that was newest, and drops those older than
    // `window_seconds` before the newest.
    void add(const Snapshot& s, double window_seconds);
    const diagnose::Window& snapshots() const { return window_; }

  private:
    diagnose::Window window_;
};

// Leaves in `s` only the processes an older window snapshot needs (above).
void keep_window_processes(Snapshot& s);

}  // namespace baton::serve
