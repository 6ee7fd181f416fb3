#include "launch/launch_summary.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "hang/hang_verdict.hpp"

namespace baton::launch {

std::string launch_summary_text(const LaunchResult& r, const LaunchTopology& t) {
    std::string out;
    // A stop the user asked for (Ctrl-C) is no rank's failure.
    if (r.failure && !r.stop_signal) out += root_cause_text(*r.failure);
    // Stopped on a hang: the verdict is the root cause.
    if (r.stopped_on_hang && r.hang) out += hang::hang_text(*r.hang, "baton launch: stopped on a hang");
    out += "\n" + run::run_summary_text(r.stats, "baton launch");
    out += fmt::format("  {} rank{} on this node ({} of {} in all), {} attempt{}, logs in {}\n", t.nproc_per_node,
                       t.nproc_per_node == 1 ? "" : "s", t.nproc_per_node, t.world_size(), r.attempts,
                       r.attempts == 1 ? "" : "s", r.run_dir);
    for (const StuckProcess& s : r.stuck)
        out +=
            fmt::format("  pid {} ({}) is still there after SIGKILL, in state {}{}: not waited for\n", s.pid, s.name,
                        s.state, s.state == 'D' ? " (waiting in the kernel: a driver or a network file system)" : "");
    return out;
}

}  // namespace baton::launch
