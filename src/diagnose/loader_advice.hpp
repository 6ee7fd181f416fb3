// The DataLoader advice input_bound gives, whether it was judged from system metrics
// (rules_pipeline.cpp) or from the hook's step events (rules_steps.cpp): how many workers this box
// can feed a GPU with, or, when the workers already use them, how to make batches cheaper.
#pragma once

#include <string>

namespace baton::diagnose {

struct LoaderAdvice {
    std::string fix;
    std::string snippet;  // the DataLoader call to paste
};

// `waiting`: who waits, as the start of a sentence ("GPU0 waits for batches"); `workers`: the
// DataLoader workers seen; `cpus`, `gpus_in_use` (0: a machine without GPU, trained on the CPU):
// the box; `host_saturated`: the host's CPUs are already the limit; `to_gpu`: the batches go to a
// GPU (only then is pin_memory=True advised: pinning is for copies to a GPU). One core per GPU
// stays with the training process, the rest are workers.
LoaderAdvice loader_advice(const std::string& waiting, unsigned workers, unsigned cpus, unsigned gpus_in_use,
                           bool host_saturated, bool to_gpu);

}  // namespace baton::diagnose
