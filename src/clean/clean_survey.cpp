#include "clean/clean_survey.hpp"
#include "store/history_runs.hpp"

#include <unistd.h>

namespace baton::clean {

void name_ended_owners(std::map<std::uint32_t, ProcessFacts>& facts, store::History& history) {
    for (auto& [pid, f] : facts)
        if (f.owner_pid && !f.owner_alive)
            f.owner_label = history.run_reads().owner_label(*f.owner_pid, f.owner_start_ticks).value_or("");
}

std::vector<EndTarget> end_targets(const std::vector<Leftover>& leftovers) {
    std::vector<EndTarget> targets;
    for (const Leftover& l : leftovers)
        if (l.endable) targets.push_back({l.pid, l.start_ticks, l.gpu_memory_bytes});
    return targets;
}

CleanSurvey survey_leftovers(SamplerOptions sampler, const CleanFilter& filter, const std::string& db_path) {
    CleanSurvey s;
    sampler.skip_idle_processes = false;  // every process's state as it is now (a zombie does not run)
    Sampler(sampler).take(s.snapshot);
    std::map<std::uint32_t, ProcessFacts> facts = gather_process_facts(s.snapshot);
    // A history that is not there is not created: clean only reads it.
    if (!db_path.empty() && access(db_path.c_str(), R_OK) == 0)
        if (Result<store::History> h = store::History::open(db_path, store::HistoryAccess::read); h.ok())
            name_ended_owners(facts, *h);
    s.leftovers = find_leftovers(s.snapshot, facts, filter);
    s.targets = end_targets(s.leftovers);
    return s;
}

EndTally tally_ends(const std::vector<EndResult>& ended) {
    EndTally t;
    for (const EndResult& r : ended) {
        const bool gone =
            r.outcome == EndOutcome::ended || r.outcome == EndOutcome::killed || r.outcome == EndOutcome::gone_before;
        if (gone) t.gpu_memory_freed_bytes += r.gpu_memory_bytes;
        t.all_done &= gone || r.outcome == EndOutcome::reused;
    }
    return t;
}

}  // namespace baton::clean
