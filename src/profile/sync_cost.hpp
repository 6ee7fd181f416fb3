// What a synchronising call costs the GPU (docs/profile.md, "What a sync costs"): each GPU idle
// instant is charged at most once, to the sync that caused it, and only as much as the sync could
// have saved.
//
// The counterfactual: a sync blocks the host until the GPU has run everything queued; the GPU then
// idles until the host has issued the next work. Without the sync the host would have spent the
// time it was blocked, while the GPU ran, issuing that work ahead, so the idle after the drain would
// have been shorter by up to that much. A call is therefore charged:
//   - only if the GPU ran while it blocked (a sync on an idle GPU waits for nothing) and went idle
//     before it returned (it drained the queue);
//   - the GPU's host-late idle (idle_host_wait, idle_launch_gap) from the drain on, through the
//     host's kernel-by-kernel restart that follows (the small gaps of a host that lost its lead),
//   - up to the GPU-busy time the host was blocked in it,
//   - until the next call that drains, the host entering the DataLoader (data_in_step's), idle the
//     host had queued work for (idle_other: the host was ahead again) or the step's end.
// So eight calls in one gap are charged that gap once, and a sync after a long idle nothing. Pure.
#pragma once

#include <vector>

#include "profile/time_partition.hpp"

namespace baton::profile {

struct SyncCall {
    double start_us = 0, end_us = 0;
};

// The labels of the partitions handed in: the GPU's idle kinds, and the host's DataLoader phase.
struct SyncLabels {
    int idle_host_wait = 0, idle_launch_gap = 0, idle_other = 0;
    int host_data = 0;
};

struct SyncCharges {
    std::vector<double> per_call_us;            // by call: the most charged on any one device
    std::vector<std::vector<Piece>> by_device;  // the idle charged, in time order (label: the call's index)
};

// `calls` in any order; `gpus` each a device's partition (GpuSlice labels, in time order); `host` the
// step thread's partition; `steps` the steps' [start, end) in time order (a walk never crosses one's end).
SyncCharges charge_syncs(const std::vector<SyncCall>& calls, const std::vector<std::vector<Piece>>& gpus,
                         const std::vector<Piece>& host, const std::vector<std::pair<double, double>>& steps,
                         const SyncLabels& labels);

}  // namespace baton::profile
