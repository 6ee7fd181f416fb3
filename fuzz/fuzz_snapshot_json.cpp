// A line of `baton snapshot --json` as `baton diagnose --replay` reads it, then judged: any
// line is either one error message on one line, or a snapshot every rule can judge.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "diagnose/rules.hpp"
#include "formats/snapshot_json_read.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    baton::Result<baton::Snapshot> s = baton::formats::parse_snapshot_json(text);
    if (!s.ok()) {
        if (s.error().message.find('\n') != std::string::npos) std::abort();  // errors are one line
        return 0;
    }
    // A window of two snapshots a second apart: the rules' series, rates and joins all run.
    baton::diagnose::Window w;
    w.push_back(*s);
    w.push_back(*s);
    w.back().time_unix_ms += 1000;
    if (w.back().monotonic_seconds) *w.back().monotonic_seconds += 1;
    (void)baton::diagnose::diagnose(w, baton::Thresholds{});
    return 0;
}
