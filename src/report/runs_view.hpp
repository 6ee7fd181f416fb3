// The views of `baton runs`: the list (a table, or JSON Lines one run each), one run's record
// with its findings and summary, and what `runs prune` deleted (docs/cli.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/history.hpp"

namespace baton::report {

// ID, KIND, STATE, STARTED (UTC), DURATION, EXIT, SAMPLES, FINDINGS, NAME.
std::string runs_table(const std::vector<store::RunRecord>& runs);
std::string runs_jsonl(const std::vector<store::RunRecord>& runs);

// `runs show`: its row, command, cwd, host, machine, each finding with its time, the summary.
// `hangs`: the hang verdicts said during the run (the last one is shown whole).
std::string run_text(const store::RunRecord& run, const std::vector<store::RecordedFinding>& findings,
                     const std::vector<store::RecordedHang>& hangs = {});
std::string run_json(const store::RunRecord& run, const std::vector<store::RecordedFinding>& findings,
                     const std::vector<store::RecordedHang>& hangs = {});

struct PruneOutcome {
    std::vector<store::RunRecord> runs;  // deleted, or with dry_run those that would be
    bool dry_run = false;
    std::int64_t bytes_freed = 0;
    std::string note;  // why the space was not given back
};
std::string prune_text(const PruneOutcome& o);
std::string prune_json(const PruneOutcome& o);

}  // namespace baton::report
