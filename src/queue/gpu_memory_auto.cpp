#include "queue/gpu_memory_auto.hpp"
#include "store/history_runs.hpp"

#include <algorithm>
#include <cmath>

namespace baton::queue {

std::uint64_t with_margin(std::uint64_t peak_bytes) {
    constexpr std::uint64_t step = 256ull << 20;
    const long double want = static_cast<long double>(peak_bytes) * (1 + kAutoMarginPercent / 100);
    const auto bytes = static_cast<std::uint64_t>(std::ceil(want / step)) * step;
    return std::max(bytes, step);
}

Result<std::uint64_t> auto_gpu_memory(store::History& h, const std::string& name) {
    Result<std::vector<store::RunRecord>> runs = h.run_reads().runs();
    if (!runs.ok()) return runs.error();
    int used = 0;
    std::optional<double> peak_bytes;  // the largest GPU memory any of those runs used
    for (auto it = runs->rbegin(); it != runs->rend() && used < kAutoRuns; ++it) {
        if (it->name != name || it->state != store::RunState::finished || it->exit_status != 0) continue;
        Result<std::vector<store::RunSample>> samples = h.run_reads().samples(it->id);
        if (!samples.ok()) continue;
        bool any = false;
        for (const store::RunSample& s : *samples)
            for (const store::RunSample::Gpu& g : s.gpus) {
                peak_bytes = std::max(peak_bytes.value_or(0), g.memory_used_bytes);
                any = true;
            }
        used += any ? 1 : 0;
    }
    if (!peak_bytes)
        return make_error("--gpu-mem auto: no successful run named '" + name +
                          "' that used a GPU is in the history yet: give --gpu-mem SIZE the first time");
    return with_margin(static_cast<std::uint64_t>(*peak_bytes));
}

}  // namespace baton::queue
