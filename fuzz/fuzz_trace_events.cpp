// A profiler trace (any file a user hands `baton profile`): parsed or refused in one line, never a
// throw; every kept event names an interned name and has no negative duration.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "profile/trace_events.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    baton::profile::TraceLimits limits;
    limits.max_events = 10000;
    const baton::Result<baton::profile::Trace> t = baton::profile::parse_trace(text, limits);
    if (!t.ok()) {
        if (t.error().message.empty() || t.error().message.find('\n') != std::string::npos) std::abort();
        return 0;
    }
    if (t->events.size() > limits.max_events) std::abort();
    for (const baton::profile::TraceEvent& e : t->events)
        if (e.name >= t->names.size() || e.dur_us < 0) std::abort();
    return 0;
}
