#include "diagnose/loader_advice.hpp"

#include <algorithm>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

namespace baton::diagnose {

LoaderAdvice loader_advice(const std::string& waiting, unsigned workers, unsigned cpus, unsigned gpus_in_use,
                           bool host_saturated, bool to_gpu) {
    cpus = std::max(1u, cpus);
    const std::string box = gpus_in_use ? fmt::format("{} cores for {} GPU(s)", cpus, gpus_in_use)
                                        : fmt::format("{} cores and no GPU", cpus);
    const unsigned per_gpu = std::max(1u, cpus / std::max(1u, gpus_in_use));
    // At least one worker (it overlaps loading with the GPU's work), never more than the cores
    // leave: on 2 cores, 1 worker and the trainer (the same rule as the hook's check()).
    const unsigned suggested = per_gpu > 1 ? per_gpu - 1 : 1u;
    const bool at_limit = workers >= suggested || host_saturated;
    // Pinned memory speeds up copies to a GPU; a run on the CPU has none to make.
    const std::string pin = to_gpu ? "pin_memory=True, " : "";
    LoaderAdvice a;
    if (workers == 0) {
        // num_workers=0: the training process decodes and augments every batch between its steps.
        a.fix = fmt::format(
            "{} and loads every batch itself (num_workers=0): nothing prepares the next batch while it trains. "
            "With {}, use num_workers={} (one core stays with the training process), {}"
            "persistent_workers=True and prefetch_factor=4.{}",
            waiting, box, suggested, pin,
            host_saturated ? " The host's CPUs are busy too: see what else runs (baton top, sorted by CPU)." : "");
        a.snippet = fmt::format(
            "loader = torch.utils.data.DataLoader(dataset, batch_size=..., shuffle=True,\n"
            "    num_workers={}, {}persistent_workers=True, prefetch_factor=4)",
            suggested, pin);
        return a;
    }
    a.fix = at_limit ? fmt::format(
                           "{} while its {} DataLoader worker(s) already use the CPUs this box can give it ({}). "
                           "Make each batch cheaper to prepare: move augmentation to the GPU "
                           "(torchvision.transforms.v2 on CUDA tensors, or NVIDIA DALI), decode at lower "
                           "resolution, cache decoded samples; and keep {}"
                           "persistent_workers=True, prefetch_factor=4.",
                           waiting, workers, box, pin)
                     : fmt::format(
                           "{} while its {} DataLoader worker(s) are busy. With {}, use num_workers={} (one core "
                           "stays with the training process), {}persistent_workers=True and "
                           "prefetch_factor=4.",
                           waiting, workers, box, suggested, pin);
    a.snippet = fmt::format(
        "loader = torch.utils.data.DataLoader(dataset, batch_size=..., shuffle=True,\n"
        "    num_workers={}, {}persistent_workers=True, prefetch_factor=4)",
        at_limit ? std::max(workers, 1u) : suggested, pin);
    return a;
}

}  // namespace baton::diagnose
