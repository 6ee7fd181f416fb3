#include "measure/memory_bench.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/allowed_cpus.hpp"
#include "measure/bench_math.hpp"
#include "measure/contention.hpp"
#include "measure/file_text.hpp"
#include "core/clock.hpp"
#include "core/text_parse.hpp"
#include "core/units.hpp"

namespace baton::measure {

namespace {

namespace fs = std::filesystem;

// The NUMA nodes with CPUs we may use: node id -> its CPUs.
std::vector<std::pair<unsigned, std::vector<unsigned>>> numa_nodes(const std::string& sys_root,
                                                                   const std::vector<unsigned>& allowed) {
    std::vector<std::pair<unsigned, std::vector<unsigned>>> out;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(sys_root + "/devices/system/node", ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("node", 0) != 0) continue;
        const std::optional<std::uint64_t> id = text::parse_u64(name.substr(4));
        if (!id) continue;
        std::vector<unsigned> cpus;
        for (unsigned c : text::parse_cpu_list(file_text(e.path().string() + "/cpulist")))
            if (std::find(allowed.begin(), allowed.end(), c) != allowed.end()) cpus.push_back(c);
        if (!cpus.empty()) out.emplace_back(static_cast<unsigned>(*id), cpus);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// The sizes of the distinct last-level caches (each counted once, by the CPUs that share it).
std::size_t last_level_cache_bytes(const std::string& sys_root) {
    std::set<std::string> seen;
    std::size_t total = 0;
    std::error_code ec;
    for (const fs::directory_entry& cpu : fs::directory_iterator(sys_root + "/devices/system/cpu", ec)) {
        const std::string name = cpu.path().filename().string();
        if (name.rfind("cpu", 0) != 0 || !text::parse_u64(name.substr(3))) continue;
        std::size_t best_level = 0, best_size = 0;
        std::string best_shared;
        std::error_code ec2;
        for (const fs::directory_entry& idx : fs::directory_iterator(cpu.path() / "cache", ec2)) {
            const std::string dir = idx.path().string();
            const std::optional<std::uint64_t> level = text::parse_u64(file_text(dir + "/level"));
            const std::string type = file_text(dir + "/type");
            if (!level || type.rfind("Instruction", 0) == 0 || *level < best_level) continue;
            std::string size = file_text(dir + "/size");  // "107520K"
            while (!size.empty() && (size.back() == '\n' || size.back() == 'K')) size.pop_back();
            const std::optional<std::uint64_t> kib = text::parse_u64(size);
            if (!kib) continue;
            best_level = *level;
            best_size = *kib * 1024;
            best_shared = std::to_string(*level) + ":" + file_text(dir + "/shared_cpu_list");
        }
        if (best_size && seen.insert(best_shared).second) total += best_size;
    }
    return total;
}

// The memory modules SMBIOS lists (readable by root only on most systems).
std::vector<MemoryDevice> memory_devices(const std::string& sys_root) {
    std::vector<MemoryDevice> out;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(sys_root + "/firmware/dmi/entries", ec)) {
        if (e.path().filename().string().rfind("17-", 0) != 0) continue;
        if (std::optional<MemoryDevice> d = parse_smbios_memory_device(file_text(e.path().string() + "/raw")))
            out.push_back(*d);
    }
    return out;
}

struct Bandwidth {
    double copy = 0, triad = 0;  // bytes per second, best of the repetitions
};

// Copy and triad with one thread per CPU of `cpus` over `elements` doubles per array.
Bandwidth measure(const std::vector<unsigned>& cpus, std::size_t elements, int repeats) {
    const std::size_t bytes = elements * sizeof(double);
    // Not initialised here: each thread touches its own part first, so the pages land on its node.
    double* a = static_cast<double*>(std::aligned_alloc(64, bytes));
    double* b = static_cast<double*>(std::aligned_alloc(64, bytes));
    double* c = static_cast<double*>(std::aligned_alloc(64, bytes));
    Bandwidth best;
    if (!a || !b || !c || cpus.empty() || repeats < 1) {
        std::free(a);
        std::free(b);
        std::free(c);
        return best;
    }
    const std::size_t n = cpus.size();
    // Phases between barrier completions: touch, then per repetition copy and triad. Each thread
    // times its own part of a phase; the phase lasts from the first start to the last end. (The
    // main thread's clock would not do: with every CPU busy copying it is woken after the threads
    // began, or after they ended, and a 2-CPU machine read 2 TB/s.)
    struct Span {
        double start = 0, end = 0;
    };
    std::vector<Span> copy_spans(n * static_cast<std::size_t>(repeats)),
        triad_spans(n * static_cast<std::size_t>(repeats));
    std::barrier sync(static_cast<std::ptrdiff_t>(n));
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < n; ++t) {
        threads.emplace_back([&, t] {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpus[t], &set);
            pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort: unpinned still measures
            const std::size_t lo = elements * t / n, hi = elements * (t + 1) / n;
            for (std::size_t i = lo; i < hi; ++i) {
                a[i] = 1.0;
                b[i] = 2.0;
                c[i] = 0.0;
            }
            const double s = 3.0;
            for (int r = 0; r < repeats; ++r) {
                const std::size_t slot = static_cast<std::size_t>(r) * n + t;
                sync.arrive_and_wait();
                copy_spans[slot].start = monotonic_seconds();
                for (std::size_t i = lo; i < hi; ++i) c[i] = a[i];
                copy_spans[slot].end = monotonic_seconds();
                sync.arrive_and_wait();
                triad_spans[slot].start = monotonic_seconds();
                for (std::size_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
                triad_spans[slot].end = monotonic_seconds();
            }
        });
    }
    for (std::thread& t : threads) t.join();
    // The best repetition of each kernel: first start to last end over the threads.
    auto best_seconds = [&](const std::vector<Span>& spans) {
        double best_s = 1e30;
        for (std::size_t r = 0; r < static_cast<std::size_t>(repeats); ++r) {
            double first = 1e300, last = -1e300;
            for (std::size_t t = 0; t < n; ++t) {
                first = std::min(first, spans[r * n + t].start);
                last = std::max(last, spans[r * n + t].end);
            }
            best_s = std::min(best_s, last - first);
        }
        return best_s;
    };
    const double copy_s = best_seconds(copy_spans), triad_s = best_seconds(triad_spans);
    // STREAM's byte counts: copy reads one array and writes one, triad reads two and writes one.
    best.copy = 2.0 * static_cast<double>(bytes) / copy_s;
    best.triad = 3.0 * static_cast<double>(bytes) / triad_s;
    // Read the result so the kernels cannot be optimised away.
    volatile double sink = a[elements / 2] + c[elements / 3];
    (void)sink;
    std::free(a);
    std::free(b);
    std::free(c);
    return best;
}

std::string gbps(double bytes_per_second) {
    return fmt::format("{:.1f}", bytes_per_second / 1e9);
}

}  // namespace

BenchReport run_memory_bench(const MemoryBenchOptions& o) {
    BenchReport r;
    r.bench = "memory";
    std::vector<unsigned> cpus = allowed_cpus();
    if (o.max_threads > 0 && cpus.size() > o.max_threads) cpus.resize(o.max_threads);
    std::size_t bytes = o.array_bytes;
    const std::size_t llc = last_level_cache_bytes(o.sys_root);
    if (bytes == 0) bytes = std::clamp<std::size_t>(4 * llc, std::size_t{64} << 20, std::size_t{1} << 30);
    const std::size_t elements = std::max<std::size_t>(bytes / sizeof(double), 1024);
    r.notes.push_back(fmt::format("arrays: 3 x {} of doubles (last-level caches: {}), best of {} repetitions",
                                  format_size(elements * sizeof(double)), llc ? format_size(llc) : "unknown",
                                  o.repeats));

    ContentionWatch watch(o.sampler);
    watch.start();
    Table t;
    t.title = "host memory bandwidth by threads (GB/s)";
    t.keys = {"threads", "cpus", "copy_bytes_per_second", "triad_bytes_per_second"};
    t.headers = {"threads", "CPUs", "copy", "triad"};
    t.align = "rrrr";
    std::vector<std::size_t> counts;
    for (std::size_t k = 1; k < cpus.size(); k *= 2) counts.push_back(k);
    counts.push_back(cpus.size());
    Bandwidth all;
    for (std::size_t k : counts) {
        const std::vector<unsigned> use(cpus.begin(), cpus.begin() + static_cast<std::ptrdiff_t>(k));
        const Bandwidth b = measure(use, elements, o.repeats);
        t.rows.push_back({number_cell(static_cast<double>(k), std::to_string(k)),
                          text_cell(fmt::format("{}-{}", use.front(), use.back())), number_cell(b.copy, gbps(b.copy)),
                          number_cell(b.triad, gbps(b.triad))});
        all = b;
    }
    r.tables.push_back(std::move(t));
    const auto nodes = numa_nodes(o.sys_root, cpus);
    if (nodes.size() > 1) {
        Table n;
        n.title = "each NUMA node alone, its own CPUs and memory (GB/s)";
        n.keys = {"node", "threads", "copy_bytes_per_second", "triad_bytes_per_second"};
        n.headers = {"node", "threads", "copy", "triad"};
        n.align = "rrrr";
        for (const auto& [node, node_cpus] : nodes) {
            const Bandwidth b = measure(node_cpus, elements, o.repeats);
            n.rows.push_back({number_cell(node, std::to_string(node)),
                              number_cell(static_cast<double>(node_cpus.size()), std::to_string(node_cpus.size())),
                              number_cell(b.copy, gbps(b.copy)), number_cell(b.triad, gbps(b.triad))});
        }
        r.tables.push_back(std::move(n));
    }
    const std::string contention = cpu_contention(watch.finish(), static_cast<std::uint32_t>(getpid()));

    std::string source;
    const std::optional<double> peak = memory_peak_bytes_per_second(memory_devices(o.sys_root), source);
    if (!peak) source = "no memory modules listed in /sys/firmware/dmi/entries (a VM, or readable by root only)";
    for (const auto& [name, value] : {std::pair{"memory copy", all.copy}, std::pair{"memory triad", all.triad}}) {
        LinkResult l;
        l.link = name;
        l.measured = value;
        l.peak = peak;
        l.peak_source = source;
        l.ok_share = o.ok_share;
        l.verdict = link_verdict(l.share(), o.ok_share, contention);
        if (l.verdict == "saturated") l.detail = contention;
        r.links.push_back(std::move(l));
    }
    return r;
}

}  // namespace baton::measure
