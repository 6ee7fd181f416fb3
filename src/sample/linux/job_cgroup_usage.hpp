// What a Slurm job's own cgroup says it used: CPU seconds, memory against its limit, its cores.
// The kernel keeps these for the whole job, processes that ended included, which the process table
// cannot; jobstats reads them (through Princeton's cgroup_exporter) and so does baton serve
// --jobstats-compat, at scrape time, not on every sample.
//
//   cgroup v2  ROOT/system.slice/slurmstepd.scope/job_1234/   cpu.stat (usage_usec, user_usec,
//              system_usec), memory.current, memory.max, memory.stat (anon, file, shmem,
//              swapcached), memory.events (max), cpuset.cpus.effective
//   cgroup v1  ROOT/cpuacct/slurm/uid_1000/job_1234/   cpuacct.usage (ns), cpuacct.stat (ticks)
//              ROOT/memory/slurm/uid_1000/job_1234/    memory.usage_in_bytes, memory.limit_in_bytes,
//                                                      memory.stat (total_rss, total_cache,
//                                                      total_shmem), memory.failcnt
//              ROOT/cpuset/slurm/uid_1000/job_1234/    cpuset.cpus
//
// v2 when ROOT/cgroup.controllers exists, else v1 (Slurm keeps the same path under every v1
// controller; cpuacct may be mounted as cpu,cpuacct). A file that is missing or does not parse
// leaves its value absent: never a made-up zero.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "sample/snapshot.hpp"

namespace baton::os {

struct JobCgroupUsage {
    std::optional<double> cpu_seconds, cpu_user_seconds, cpu_system_seconds;  // since the job began
    std::optional<std::uint64_t> memory_used_bytes;                           // the kernel's charge, cache included
    std::optional<std::uint64_t> memory_limit_bytes;                          // absent: no limit (or not read)
    std::optional<std::uint64_t> memory_rss_bytes, memory_cache_bytes, memory_shmem_bytes;
    std::optional<std::uint64_t> memory_fail_count;  // times the limit was hit (v1 failcnt, v2 events' max)
    std::optional<unsigned> cpus;                    // cores in its cpuset
};

// The directory of Slurm job `job_id` within a process's cgroup path (ProcessInfo::cgroup):
// "/slurm/uid_1000/job_12/step_0/task_1" -> "/slurm/uid_1000/job_12". Empty when the path names
// another job, is not absolute, or has "." or ".." components (a hostile path never reaches a file
// outside the cgroup tree).
std::string slurm_job_cgroup_dir(std::string_view process_cgroup, std::string_view job_id);

// Reads job directory `job_dir` (from slurm_job_cgroup_dir) under the cgroup mount `root`
// (/sys/fs/cgroup).
JobCgroupUsage read_job_cgroup_usage(const std::string& root, const std::string& job_dir);

// Every Slurm job of `snap`, by job id: its directory from the cgroup of its first process whose
// cgroup names it, read under `root`. A job whose directory is not found is left out.
std::map<std::string, JobCgroupUsage> read_slurm_job_cgroups(const Snapshot& snap, const std::string& root);

// The parsers, for the tests: a memory.stat or cpu.stat line's value ("anon 4096" under "anon").
std::optional<std::uint64_t> stat_value(std::string_view text, std::string_view key);
// A limit file: digits, or "max" (v2) / a value past 2^62 (v1's unlimited) -> absent.
std::optional<std::uint64_t> memory_limit(std::string_view text);

}  // namespace baton::os
