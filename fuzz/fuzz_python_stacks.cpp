// A rank's stacks file (the job's processes write it; a job may write anything there): the last
// dump's threads, at most one of them current and none twice, and the ranks' grouping a partition
// whose shared frames every group has.
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string_view>

#include "hang/python_stacks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::vector<baton::hang::PyThreadStack> dump = baton::hang::parse_faulthandler_dump(text);
    std::set<std::uint64_t> ids;
    int current = 0;
    for (const baton::hang::PyThreadStack& t : dump) {
        current += t.current ? 1 : 0;
        if (t.thread_id == 0 && dump.size() != 1) std::abort();  // ("Stack": a dump of its own)
        if (!ids.insert(t.thread_id).second) std::abort();
    }
    if (current > 1) std::abort();
    // Each thread as a rank of its own, and the main thread twice more: a partition of the ranks.
    std::vector<baton::hang::RankStack> ranks;
    for (std::size_t i = 0; i < dump.size(); ++i) ranks.push_back({static_cast<int>(i), dump[i].frames});
    if (const baton::hang::PyThreadStack* main = baton::hang::main_thread(dump)) {
        ranks.push_back({1000, main->frames});
        ranks.push_back({1001, main->frames});
    }
    std::size_t seen = 0;
    for (const baton::hang::StackGroup& g : baton::hang::group_stacks(ranks)) {
        if (g.ranks.empty() || g.shared_outer > g.frames.size()) std::abort();
        seen += g.ranks.size();
    }
    if (seen != ranks.size()) std::abort();
    return 0;
}
