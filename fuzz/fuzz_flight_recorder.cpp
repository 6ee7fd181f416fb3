// A Flight Recorder dump as the reader wrote it in JSON (a job may write anything into its dump
// files): parsed or refused, never a throw; the judgement of four ranks made from it (one of them
// missing its last collective) names only ranks that are there or members without a dump, says one
// sentence, and a desync always names someone.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string_view>

#include "hang/flight_recorder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    baton::Result<baton::hang::FrDump> d = baton::hang::parse_flight_recorder_json(text, 0);
    if (!d.ok()) return 0;
    std::vector<baton::hang::FrDump> dumps;
    std::set<int> allowed;
    for (int r = 0; r < 4; ++r) {
        baton::hang::FrDump x = *d;
        x.rank = r;
        if (r == 2 && !x.entries.empty()) x.entries.pop_back();
        dumps.push_back(std::move(x));
        allowed.insert(r);
    }
    for (const auto& [pg, ranks] : d->pg_ranks) allowed.insert(ranks.begin(), ranks.end());
    if (baton::hang::oldest_pending(*d) && baton::hang::oldest_pending(*d)->p2p) std::abort();
    for (bool multi : {false, true}) {
        const auto v = baton::hang::judge_flight_recorder(dumps, {0, 1, 2, 3}, multi);
        if (!v) continue;
        if (v->summary.rfind("Flight Recorder: ", 0) != 0) std::abort();
        if (v->desync && v->culprits.empty()) std::abort();
        if (!std::is_sorted(v->culprits.begin(), v->culprits.end())) std::abort();
        for (int c : v->culprits)
            if (!allowed.count(c)) std::abort();
    }
    return 0;
}
