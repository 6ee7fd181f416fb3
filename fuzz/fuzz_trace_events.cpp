// A profiler trace (any file a user hands `baton profile`): parsed or refused in one line, never a
// throw, the same when read a few bytes a piece; every kept event names an interned name and has no negative duration;
// a parsed trace is broken down and judged without a crash: each step's GPU slices and host phases add up to the step,
// every number is finite, no GPU idle is charged to two causes, every finding is one of the profile's rules.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "profile/profile_rules.hpp"
#include "profile/step_breakdown.hpp"
#include "profile/trace_events.hpp"

namespace {

// a and b agree to the precision their magnitude leaves (times may be absurd in a hostile file).
bool near(double a, double b, double scale) {
    return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(scale));
}

void check_analysis(const baton::profile::Trace& t) {
    using namespace baton::profile;
    const Analysis a = analyse(t);
    for (const Step& s : a.steps) {
        if (!std::isfinite(s.dur_us) || s.dur_us < 0) std::abort();
        if (s.gpus.size() != a.devices.size()) std::abort();
        const double scale = std::fabs(s.start_us) + s.dur_us;
        double host = 0;
        for (double v : s.host.us) {
            if (!std::isfinite(v) || v < 0) std::abort();
            host += v;
        }
        if (!near(host, s.dur_us, scale)) std::abort();
        for (const GpuStep& g : s.gpus) {
            double sum = 0;
            for (double v : g.us) {
                if (!std::isfinite(v) || v < 0) std::abort();
                sum += v;
            }
            if (!near(sum, s.dur_us, scale)) std::abort();
            // Each idle instant has one cause: a sync's or launch_bound's, never both.
            if (g.idle_sync_us < 0 || g.idle_host_busy_us < 0) std::abort();
            if (g.idle_sync_us + g.idle_host_busy_us > g.idle() + 1e-6 * std::max(1.0, scale)) std::abort();
        }
    }
    for (const SyncSite& s : a.syncs)
        if (s.count == 0 || s.steps > a.steps.size()) std::abort();
    const std::vector<std::string>& ids = profile_rule_ids();
    for (const baton::diagnose::Finding& f : judge_profile(a))
        if (std::find(ids.begin(), ids.end(), f.rule) == ids.end() || f.summary.empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    baton::profile::TraceLimits limits;
    limits.max_events = 10000;
    const baton::Result<baton::profile::Trace> t = baton::profile::parse_trace(text, limits);
    // Read a few bytes a piece (values cut between pieces everywhere), it reads the same.
    baton::profile::TraceLimits small = limits;
    small.piece_bytes = 1 + size % 7;
    const baton::Result<baton::profile::Trace> cut = baton::profile::parse_trace(text, small);
    if (cut.ok() != t.ok()) std::abort();
    if (t.ok() && (cut->events.size() != t->events.size() || cut->names != t->names)) std::abort();
    if (!t.ok() && cut.error().message != t.error().message) std::abort();
    if (!t.ok()) {
        if (t.error().message.empty() || t.error().message.find('\n') != std::string::npos) std::abort();
        return 0;
    }
    if (t->events.size() > limits.max_events) std::abort();
    for (const baton::profile::TraceEvent& e : t->events)
        if (e.name >= t->names.size() || e.dur_us < 0 ||
            (e.stack != baton::profile::TraceEvent::kNoStack && e.stack >= t->names.size()) ||
            (e.input_type != baton::profile::TraceEvent::kNoStack && e.input_type >= t->names.size()))
            std::abort();
    check_analysis(*t);
    return 0;
}
