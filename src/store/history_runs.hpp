// The runs of the history (table runs, with samples, steps, findings, hangs, profiler windows and
// out-of-memory captures): written as a run goes (RunWrites, `baton run`'s recorder) and read back
// (RunReads: `baton runs`, report, compare, clean's owner names). Defined in history.cpp, beside
// the schema and the sample blob they share.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "store/history.hpp"
#include "store/history_table.hpp"

namespace baton::store {

// One sample as its row's blob (docs/architecture.md, "Run history"): the only code that knows the
// on-disk floats (GiB, MB/s, -1 for unknown). unpack_sample is false on a blob it cannot read
// (truncated, an unknown version, trailing bytes).
std::string pack_sample(const RunSample& s);
bool unpack_sample(const std::string& blob, RunSample& s);

// A run as it is recorded.
class RunWrites : public HistoryTable {
  public:
    explicit RunWrites(History& h) : HistoryTable(h) {}

    Result<std::int64_t> begin_run(const std::string& name, const std::string& command, const std::string& cwd,
                                   const std::string& host, std::int64_t start_ms);
    // The machine the run ran on (called once, at the first sample).
    Status set_machine(std::int64_t run, unsigned cpu_count, std::uint64_t memory_total_bytes,
                       const std::vector<RunGpu>& gpus);
    Status add_sample(std::int64_t run, const RunSample& s);
    Status add_step(std::int64_t run, const StepEvent& e);
    // Several steps in one transaction (what `baton run` drains from the socket each turn).
    Status add_steps(std::int64_t run, const std::vector<StepEvent>& steps);
    Status add_finding(std::int64_t run, std::int64_t t_ms, const diagnose::Finding& f);
    // Replaces the latest record of f's rule and subject (its time stays that of the first sighting),
    // or records f when there is none.
    Status replace_finding(std::int64_t run, std::int64_t t_ms, const diagnose::Finding& f);
    Status add_hang(std::int64_t run, std::int64_t t_ms, const std::string& rule, const std::string& text);
    Status add_profile(std::int64_t run, const RecordedProfile& p);
    Status add_oom_capture(std::int64_t run, const RecordedOomCapture& c);
    // `energy`: store/run_energy.hpp's JSON ("" when none was measured).
    Status finish_run(std::int64_t run, std::int64_t end_ms, int exit_status, const std::string& summary,
                      const std::string& energy = "");
};

// The recorded runs.
class RunReads : public HistoryTable {
  public:
    explicit RunReads(History& h) : HistoryTable(h) {}

    Result<std::vector<RunRecord>> runs();
    // What a baton process with this pid and start time recorded: "run 12 (resnet)" or
    // "queued job 7 (resnet)"; "" when nothing (baton clean names a leftover's owner with it).
    Result<std::string> owner_label(std::int64_t pid, std::uint64_t start_ticks);
    // One run's record; an error "no run N in the history" when there is none.
    Result<RunRecord> run(std::int64_t id);
    // One run with its samples, findings and steps.
    Result<StoredRun> load_run(std::int64_t id);
    Result<std::vector<RunSample>> samples(std::int64_t run);
    Result<std::vector<RecordedFinding>> findings(std::int64_t run);
    Result<std::vector<RecordedHang>> hangs(std::int64_t run);
    // The run's profiler windows, oldest first, traces included (not part of load_run: they are large).
    Result<std::vector<RecordedProfile>> profiles(std::int64_t run);
    // The run's out-of-memory captures, oldest first.
    Result<std::vector<RecordedOomCapture>> oom_captures(std::int64_t run);
    Result<std::vector<StepEvent>> steps(std::int64_t run);
    // The runs prune(before_ms) would delete: finished or interrupted, ended (or, when
    // interrupted, started) before `before_ms`. What `baton runs prune --dry-run` lists.
    Result<std::vector<RunRecord>> prunable(std::int64_t before_ms);
    // Deletes those runs (their samples, findings and steps go with them); returns how many.
    Result<int> prune(std::int64_t before_ms);
};

}  // namespace baton::store
