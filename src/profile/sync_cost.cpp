#include "profile/sync_cost.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

namespace baton::profile {

namespace {

// The host's and the GPU's clocks agree to a few microseconds: an idle that begins just after the
// call returned still began when the call drained the queue.
constexpr double kDrainSlackUs = 10;
constexpr double kNever = std::numeric_limits<double>::infinity();

bool is_idle(int label, const SyncLabels& s) {
    return label == s.idle_host_wait || label == s.idle_launch_gap || label == s.idle_other;
}

// The first piece that ends after `t`.
std::vector<Piece>::const_iterator piece_after(const std::vector<Piece>& pieces, double t) {
    return std::upper_bound(pieces.begin(), pieces.end(), t, [](double x, const Piece& p) { return x < p.end; });
}

// The GPU's busy time within [from, to).
double busy_in(const std::vector<Piece>& gpu, double from, double to, const SyncLabels& s) {
    double sum = 0;
    for (auto it = piece_after(gpu, from); it != gpu.end() && it->start < to; ++it)
        if (it->label >= 0 && !is_idle(it->label, s)) sum += std::min(it->end, to) - std::max(it->start, from);
    return sum;
}

// Where the GPU went idle after running, within [from, to + slack): the queue the call drained.
std::optional<double> drained_at(const std::vector<Piece>& gpu, double from, double to, const SyncLabels& s) {
    bool ran = false;
    for (auto it = piece_after(gpu, from); it != gpu.end() && it->start < to + kDrainSlackUs; ++it) {
        if (!is_idle(it->label, s))
            ran = true;
        else if (ran)
            return it->start;
    }
    return std::nullopt;
}

double step_end_at(const std::vector<std::pair<double, double>>& steps, double t) {
    auto it = std::upper_bound(steps.begin(), steps.end(), t,
                               [](double x, const std::pair<double, double>& s) { return x < s.first; });
    if (it == steps.begin()) return t;
    --it;
    return t < it->second ? it->second : t;
}

// The first instant in [from, to) at which the host is in the DataLoader, else `to`.
double data_from(const std::vector<Piece>& host, double from, double to, int data) {
    for (auto it = piece_after(host, from); it != host.end() && it->start < to; ++it)
        if (it->label == data) return std::max(it->start, from);
    return to;
}

}  // namespace

SyncCharges charge_syncs(const std::vector<SyncCall>& calls, const std::vector<std::vector<Piece>>& gpus,
                         const std::vector<Piece>& host, const std::vector<std::pair<double, double>>& steps,
                         const SyncLabels& labels) {
    SyncCharges out;
    out.per_call_us.assign(calls.size(), 0.0);
    out.by_device.resize(gpus.size());
    std::vector<std::size_t> order(calls.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return calls[x].start_us < calls[y].start_us; });
    for (std::size_t d = 0; d < gpus.size(); ++d) {
        const std::vector<Piece>& gpu = gpus[d];
        // The calls that drained this GPU's queue: where, and the GPU time they blocked the host for.
        struct Drain {
            std::size_t call;
            double at, credit;
        };
        std::vector<Drain> drains;
        for (std::size_t k : order) {
            const SyncCall& c = calls[k];
            const double blocked = busy_in(gpu, c.start_us, c.end_us, labels);
            if (blocked <= 0) continue;
            if (const std::optional<double> at = drained_at(gpu, c.start_us, c.end_us, labels))
                drains.push_back({k, *at, blocked});
        }
        for (std::size_t i = 0; i < drains.size(); ++i) {
            const Drain& dr = drains[i];
            double limit = i + 1 < drains.size() ? calls[drains[i + 1].call].start_us : kNever;
            limit = std::min(limit, step_end_at(steps, dr.at));
            limit = data_from(host, dr.at, limit, labels.host_data);
            double credit = dr.credit, charged = 0;
            for (auto it = piece_after(gpu, dr.at); it != gpu.end() && it->start < limit && credit > 0; ++it) {
                if (it->label == labels.idle_other) break;  // queued long before: the host was ahead again
                if (!is_idle(it->label, labels)) continue;
                const double lo = std::max(it->start, dr.at), hi = std::min(it->end, limit);
                if (hi <= lo) continue;
                const double take = std::min(hi - lo, credit);
                out.by_device[d].push_back({lo, lo + take, static_cast<int>(dr.call)});
                credit -= take;
                charged += take;
            }
            out.per_call_us[dr.call] = std::max(out.per_call_us[dr.call], charged);
        }
    }
    return out;
}

}  // namespace baton::profile
