// Who makes a host-wide load: the processes behind cpu_load_high, io_wait_high, swap_active and
// the other host findings, so a finding on a shared box names whose load it is, and `baton run`
// can say whether its own job is the main cause (docs/findings.md, "Whose load"). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/series.hpp"

namespace baton::diagnose {

// What a host finding measures per process: CPU (% of one core), storage traffic (read + write,
// bytes/s: /proc/PID/io, where permitted) or memory held (resident bytes: swapping and reclaim
// come from the memory that is held).
enum class LoadKind { cpu, io, memory };

// The kind of load behind a host rule, or nullopt for a rule that is not about a host-wide load.
std::optional<LoadKind> load_kind_of_rule(std::string_view rule);

struct ProcessLoad {
    std::uint32_t pid = 0;
    std::string name, user;
    double value = 0;  // its share of the window's load: the mean over every snapshot (absent: 0)
};

// Every process's load over the window, largest first (those with none left out); memory's from
// the newest snapshot alone (a level: who holds it now).
std::vector<ProcessLoad> load_by_process(const Window& w, LoadKind kind);

// "stress-ng (pid 17, bob) 99 %, python3 (pid 4242, alice) 97 %", the `count` largest; then "; by
// user: bob 99 %, alice 98 %" when more than one user made the load (each left out below a
// twentieth of it). Empty without processes.
std::string load_text(const std::vector<ProcessLoad>& loads, LoadKind kind, std::size_t count = 3);

// The percent of the whole load that `pids` make, or nullopt when nothing measured made any.
std::optional<double> share_of_load(const std::vector<ProcessLoad>& loads, const std::set<std::uint32_t>& pids);

// Below this share of a host finding's load, the run's own job is not its main cause.
inline constexpr double kMainCausePercent = 50;

// The evidence metric that records the run's job's share (compare reads it back).
inline constexpr const char* kJobShareMetric = "run.job_share_of_load_percent";

}  // namespace baton::diagnose
