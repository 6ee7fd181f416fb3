#include "measure/contention.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/units.hpp"

namespace baton::measure {

namespace {

// The process with the most of `rate` besides `own_pid` (nullptr when none has any), and the
// sum of the others'.
template <typename Rate>
const ProcessInfo* busiest(const Snapshot& s, std::uint32_t own_pid, Rate rate, double& others) {
    const ProcessInfo* top = nullptr;
    others = 0;
    for (const ProcessInfo& p : s.processes) {
        if (p.pid == own_pid) continue;
        const double v = rate(p);
        if (v <= 0) continue;
        others += v;
        if (!top || v > rate(*top)) top = &p;
    }
    return top;
}

}  // namespace

std::string cpu_contention(const Snapshot& s, std::uint32_t own_pid) {
    double others = 0;
    const ProcessInfo* top = busiest(
        s, own_pid, [](const ProcessInfo& p) { return p.cpu_percent.value_or(0); }, others);
    if (!top || others < 50) return "";
    return fmt::format("other processes used {:.0f} % CPU meanwhile; the busiest: pid {} ({}) {:.0f} %", others,
                       top->pid, top->name, top->cpu_percent.value_or(0));
}

std::string disk_contention(const Snapshot& s, const std::string& disk, double own_read_bytes_per_second,
                            std::uint32_t own_pid) {
    for (const DiskStats& d : s.disks) {
        if (d.name != disk || !d.read_bytes_per_second) continue;
        const double others = *d.read_bytes_per_second - own_read_bytes_per_second;
        if (others < 0.1 * own_read_bytes_per_second || others < 1e6) return "";
        std::string out = fmt::format("other reads of {} at {} meanwhile", disk, format_rate(others));
        double sum = 0;
        const ProcessInfo* top = busiest(
            s, own_pid, [](const ProcessInfo& p) { return p.read_bytes_per_second.value_or(0); }, sum);
        if (top)
            out += fmt::format("; the busiest reader: pid {} ({}) {}", top->pid, top->name,
                               format_rate(*top->read_bytes_per_second));
        return out;
    }
    return "";
}

std::string net_contention(const Snapshot& s, const std::string& interface, double own_bytes_per_second) {
    for (const NetworkStats& n : s.networks) {
        if (n.name != interface || !n.rx_bytes_per_second || !n.tx_bytes_per_second) continue;
        // The bench's bytes cross the interface once each way on a real link (sent here, received
        // there) and twice on loopback (sent and received here): take the larger direction.
        const double busiest_direction = std::max(*n.rx_bytes_per_second, *n.tx_bytes_per_second);
        const double others = busiest_direction - own_bytes_per_second;
        if (others < 0.1 * own_bytes_per_second || others < 1e6) return "";
        return fmt::format("other traffic on {} at {} meanwhile", interface, format_rate(others));
    }
    return "";
}

std::string gpu_contention(const Snapshot& s, unsigned index, std::uint32_t own_pid) {
    for (const GpuInfo& g : s.gpus) {
        if (g.index != index) continue;
        for (const GpuProcess& p : g.processes) {
            if (p.our_pid() == own_pid) continue;
            std::string name;
            for (const ProcessInfo& q : s.processes)
                if (q.pid == p.our_pid()) name = " (" + q.name + ")";
            return fmt::format("pid {}{} was using GPU {} meanwhile", p.our_pid(), name, index);
        }
        return "";
    }
    return "";
}

ContentionWatch::ContentionWatch(const SamplerOptions& options) {
    SamplerOptions o = options;
    o.priming_seconds = 0.05;  // the rates that matter are those of the second snapshot, over the bench
    sampler_ = std::make_unique<Sampler>(o);
}

ContentionWatch::~ContentionWatch() = default;

void ContentionWatch::start() {
    sampler_->take(snap_);
}

const Snapshot& ContentionWatch::finish() {
    sampler_->take(snap_);
    return snap_;
}

}  // namespace baton::measure
