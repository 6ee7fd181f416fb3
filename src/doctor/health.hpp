// `baton doctor --health`: whether this node should take GPU work, as a Slurm HealthCheckProgram,
// a Kubernetes node-problem-detector plugin or a readiness probe asks it: exit status 0 or 1 and one
// line per failing check. Pure over the facts (a snapshot of the GPUs, the kernel log's XIDs);
// ids are stable (docs/cli.md lists them, docs/fleet.md shows the Slurm and Kubernetes wiring).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/checks.hpp"
#include "doctor/kernel_xids.hpp"
#include "sample/snapshot.hpp"

namespace baton::doctor {

struct HealthFacts {
    Snapshot snapshot;                        // the GPUs (read once, no processes)
    std::optional<unsigned> expect_gpus;      // --expect-gpus: how many GPUs this node must have
    std::vector<KernelXid> kernel_xids;       // the kernel log's, since boot or its last clearing
    std::string kernel_log_error;             // why the kernel log could not be read ("" when it was)
    std::optional<double> boot_unix_seconds;  // to show a kernel log time as a wall-clock time
    double busy_percent = 50;                 // a GPU at least this busy is "under load" for pcie_link
};

// One item per check that passed or was skipped, one per failing or warning GPU (each a line of
// its own), in check order.
std::vector<CheckItem> health_checks(const HealthFacts& f);

// Every health check id, in output order.
const std::vector<std::string>& health_check_ids();

}  // namespace baton::doctor
