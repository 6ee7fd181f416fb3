#include "tune/candidates.hpp"

#include <algorithm>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

namespace baton::tune {

std::vector<Candidate> candidates(const BaselineFacts& b, std::size_t most) {
    std::vector<Candidate> out;
    auto add = [&](Settings s, std::string reason) {
        if (s.empty()) return;
        for (const Candidate& c : out)
            if (c.settings == s) return;
        out.push_back({std::move(s), std::move(reason)});
    };
    const bool cuda = b.process && b.process->cuda;
    const int cpus = static_cast<int>(std::max(1u, b.cpus));
    const int threads = b.process ? b.process->torch_threads : cpus;
    const int wait_pct = static_cast<int>(100 * b.data_wait_share + 0.5);

    if (b.loader && b.data_wait_share >= kDataWaitWorthTuning) {
        const LoaderFacts& l = *b.loader;
        const std::string waits = fmt::format("the step waits for data {} % of its time", wait_pct);
        // More workers: double them (at least 2), and as many as the CPUs allow.
        if (cpus > 1) {
            std::vector<int> counts;
            const int doubled = std::min(cpus, std::max(2, 2 * l.num_workers));
            if (doubled > l.num_workers) counts.push_back(doubled);
            if (cpus > doubled && cpus > l.num_workers) counts.push_back(cpus);
            for (int w : counts) {
                const bool first = w == counts.front();
                Settings s;
                s.num_workers = w;
                if (w > 0 && l.batches && *l.batches < 2 * b.trial_steps) s.persistent_workers = true;  // short epochs
                add(s, fmt::format("{} with {} worker(s): {} more process(es) load batches", waits, l.num_workers,
                                   w - l.num_workers));
                // On the CPU the training process's own threads compete with the workers for the CPUs.
                if (first && !cuda && threads + w > cpus && std::max(1, cpus - w) < threads) {
                    s.threads = std::max(1, cpus - w);
                    add(s, fmt::format("{}, and the training's {} thread(s) would compete with {} worker(s) for {} "
                                       "CPU(s)",
                                       waits, threads, w, cpus));
                }
            }
        }
        if (l.num_workers > 0 && l.prefetch_factor.value_or(2) < 4) {
            Settings s;
            s.prefetch_factor = 4;
            add(s, waits + ": each worker keeps 4 batches ready instead of " +
                       std::to_string(l.prefetch_factor.value_or(2)));
        }
        if (l.num_workers > 0 && !l.persistent_workers && l.batches && *l.batches < 2 * b.trial_steps) {
            Settings s;
            s.persistent_workers = true;
            add(s,
                fmt::format("{}: an epoch is {} batches, and the workers start again at each one", waits, *l.batches));
        }
        if (cuda && !l.pin_memory) {
            Settings s;
            s.pin_memory = true;
            add(s, waits + ": batches copied to the GPU from pageable memory");
        }
    }
    // The CPUs oversubscribed: fewer intra-op threads leave room for the workers.
    if (b.loader && b.cpu_busy_share >= 0.9 && threads + b.loader->num_workers > cpus && threads > 1) {
        Settings s;
        s.threads = std::max(1, cpus - b.loader->num_workers);
        if (*s.threads < threads)
            add(s, fmt::format("the CPUs were {:.0f} % busy with {} thread(s) and {} worker(s) on {} CPU(s)",
                               100 * b.cpu_busy_share, threads, b.loader->num_workers, cpus));
    }
    // The other way round: a training on the CPU computing on fewer threads than it may use while the
    // CPUs sit idle. PyTorch takes its intra-op threads from OMP_NUM_THREADS (torchrun sets it to 1, so do
    // many cluster setups) or from the cores it counts, and on some virtual machines it picks one of two.
    const int workers = b.loader ? b.loader->num_workers : 0;
    if (!cuda && b.process && threads + workers < cpus && b.cpu_busy_share < kCpusIdle) {
        Settings s;
        s.threads = cpus - workers;
        add(s, fmt::format("the training computes on {} thread(s) while the job used {:.0f} % of the {} CPU(s) it may "
                           "use{}",
                           threads, 100 * b.cpu_busy_share, cpus,
                           workers ? fmt::format(" ({} of them kept for its worker(s))", workers) : std::string()));
    }
    if (cuda) {
        const ProcessFacts& p = *b.process;
        if (!p.cudnn_benchmark) {
            Settings s;
            s.cudnn_benchmark = true;
            add(s, "cuDNN picks its fastest convolution algorithms for the shapes it sees (fixed input sizes)");
        }
        if (p.compute_major >= 8 && !p.tf32) {
            Settings s;
            s.tf32 = true;
            add(s, "the GPU (compute capability 8 or later) runs float32 matmuls on its tensor cores in TF32");
        }
        if (p.compute_major >= 8) {
            Settings s;
            s.autocast = "bfloat16";
            add(s, "the GPU has bfloat16 tensor cores: mixed precision with no loss scaling");
        }
    }
    if (cuda && (b.gpu_memory_peak_share >= 0.85 || b.alloc_retries > 0)) {
        Settings s;
        s.expandable_segments = true;
        add(s, b.alloc_retries
                   ? fmt::format("the allocator retried {} allocation(s) after freeing its cache", b.alloc_retries)
                   : fmt::format("the job's memory peaked at {:.0f} % of the GPU's", 100 * b.gpu_memory_peak_share));
    }
    if (b.allow_batch_size && b.loader && b.loader->batch_size &&
        (!cuda || (b.gpu_memory_peak_share > 0 && b.gpu_memory_peak_share < 0.45))) {
        Settings s;
        s.batch_size = 2 * *b.loader->batch_size;
        add(s, cuda ? fmt::format("the GPU's memory peaked at {:.0f} %: room for twice the batch",
                                  100 * b.gpu_memory_peak_share)
                    : "--allow batch-size: twice the batch, measured in samples/s");
    }
    if (out.size() > most) out.resize(most);
    return out;
}

}  // namespace baton::tune
