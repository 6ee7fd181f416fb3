#include "sample/linux/job_cgroup_usage.hpp"

#include <unistd.h>

#include "core/text_parse.hpp"
#include "sample/linux/kept_file.hpp"
#include "sample/process_lookup.hpp"

namespace baton::os {

namespace {

// Every file read here is a few lines; a bigger one is not a cgroup file.
constexpr std::size_t kMaxCgroupFile = 64u << 10;

// Regular files only, opened without blocking (kept_file.hpp): a FIFO planted in a fake tree
// never hangs the scrape.
std::optional<std::string> read(const std::string& path) {
    ReadBuffer buf;
    if (!read_file(path, buf) || buf.size() > kMaxCgroupFile) return std::nullopt;
    return std::string(buf.view());
}

std::optional<std::uint64_t> read_u64(const std::string& path) {
    const std::optional<std::string> t = read(path);
    return t ? text::parse_u64(*t) : std::nullopt;
}

std::optional<std::uint64_t> value_in(const std::optional<std::string>& text, std::string_view key) {
    return text ? stat_value(*text, key) : std::nullopt;
}

std::optional<unsigned> cpu_count(const std::string& path) {
    const std::optional<std::string> t = read(path);
    if (!t) return std::nullopt;
    const std::size_t n = text::parse_cpu_list(*t).size();
    if (n == 0) return std::nullopt;  // an empty cpuset: not set up, not zero cores
    return static_cast<unsigned>(n);
}

std::optional<double> micros(std::optional<std::uint64_t> v) {
    if (!v) return std::nullopt;
    return static_cast<double>(*v) / 1e6;
}

void read_v2(const std::string& dir, JobCgroupUsage& u) {
    const std::optional<std::string> cpu = read(dir + "/cpu.stat");
    u.cpu_seconds = micros(value_in(cpu, "usage_usec"));
    u.cpu_user_seconds = micros(value_in(cpu, "user_usec"));
    u.cpu_system_seconds = micros(value_in(cpu, "system_usec"));
    u.memory_used_bytes = read_u64(dir + "/memory.current");
    if (const std::optional<std::string> max = read(dir + "/memory.max")) u.memory_limit_bytes = memory_limit(*max);
    const std::optional<std::string> stat = read(dir + "/memory.stat");
    // rss as cgroup_exporter counts it on v2: anonymous memory, with what of it sits in the swap cache.
    if (const std::optional<std::uint64_t> anon = value_in(stat, "anon"))
        u.memory_rss_bytes = *anon + value_in(stat, "swapcached").value_or(0);
    u.memory_cache_bytes = value_in(stat, "file");
    u.memory_shmem_bytes = value_in(stat, "shmem");
    u.memory_fail_count = value_in(read(dir + "/memory.events"), "max");
    u.cpus = cpu_count(dir + "/cpuset.cpus.effective");
}

void read_v1(const std::string& root, const std::string& job_dir, JobCgroupUsage& u) {
    std::string cpuacct = root + "/cpuacct" + job_dir;
    if (access((cpuacct + "/cpuacct.usage").c_str(), F_OK) != 0) cpuacct = root + "/cpu,cpuacct" + job_dir;
    if (const std::optional<std::uint64_t> ns = read_u64(cpuacct + "/cpuacct.usage"))
        u.cpu_seconds = static_cast<double>(*ns) / 1e9;
    const std::optional<std::string> stat = read(cpuacct + "/cpuacct.stat");
    const long hz = sysconf(_SC_CLK_TCK);
    if (hz > 0) {
        if (const auto t = value_in(stat, "user"))
            u.cpu_user_seconds = static_cast<double>(*t) / static_cast<double>(hz);
        if (const auto t = value_in(stat, "system"))
            u.cpu_system_seconds = static_cast<double>(*t) / static_cast<double>(hz);
    }
    const std::string memory = root + "/memory" + job_dir;
    u.memory_used_bytes = read_u64(memory + "/memory.usage_in_bytes");
    if (const std::optional<std::string> limit = read(memory + "/memory.limit_in_bytes"))
        u.memory_limit_bytes = memory_limit(*limit);
    const std::optional<std::string> mstat = read(memory + "/memory.stat");
    u.memory_rss_bytes = value_in(mstat, "total_rss");
    u.memory_cache_bytes = value_in(mstat, "total_cache");
    u.memory_shmem_bytes = value_in(mstat, "total_shmem");
    u.memory_fail_count = read_u64(memory + "/memory.failcnt");
    u.cpus = cpu_count(root + "/cpuset" + job_dir + "/cpuset.cpus");
}

}  // namespace

std::string slurm_job_cgroup_dir(std::string_view path, std::string_view job_id) {
    if (path.empty() || path.front() != '/' || job_id.empty()) return {};
    const std::string component = "job_" + std::string(job_id);
    std::string_view rest = path.substr(1);
    std::size_t end = 1;  // the length of path taken so far
    while (!rest.empty()) {
        const std::size_t slash = rest.find('/');
        const std::string_view part = rest.substr(0, slash);
        if (part == "." || part == ".." || part.empty()) return {};
        end += part.size();
        if (part == component) return std::string(path.substr(0, end));
        if (slash == std::string_view::npos) break;
        rest.remove_prefix(slash + 1);
        ++end;
    }
    return {};
}

JobCgroupUsage read_job_cgroup_usage(const std::string& root, const std::string& job_dir) {
    JobCgroupUsage u;
    if (job_dir.empty()) return u;
    if (access((root + "/cgroup.controllers").c_str(), F_OK) == 0)
        read_v2(root + job_dir, u);
    else
        read_v1(root, job_dir, u);
    return u;
}

std::map<std::string, JobCgroupUsage> read_slurm_job_cgroups(const Snapshot& s, const std::string& root) {
    std::map<std::string, JobCgroupUsage> out;
    for (const JobInfo& j : s.jobs) {
        if (j.kind != JobKind::slurm) continue;
        for (std::uint32_t pid : j.pids) {
            const ProcessInfo* p = find_process(s, pid);
            const std::string dir = p ? slurm_job_cgroup_dir(p->cgroup, j.id) : std::string();
            if (dir.empty()) continue;
            out.emplace(j.id, read_job_cgroup_usage(root, dir));
            break;
        }
    }
    return out;
}

std::optional<std::uint64_t> stat_value(std::string_view text, std::string_view key) {
    while (!text.empty()) {
        std::string_view line = text::take_line(text);
        if (text::take_word(line) != key) continue;
        return text::parse_u64(line);
    }
    return std::nullopt;
}

std::optional<std::uint64_t> memory_limit(std::string_view text) {
    const std::optional<std::uint64_t> v = text::parse_u64(text);
    // v1 writes "no limit" as the largest page-aligned signed value, 0x7ffffffffffff000.
    if (!v || *v >= (std::uint64_t{1} << 62)) return std::nullopt;
    return v;
}

}  // namespace baton::os
