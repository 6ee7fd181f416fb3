// Training steps as the Python hook measured them (python/baton/torch.py), for the rules that
// judge the training loop itself: input_bound (data wait, when steps exist) and
// step_time_unstable. The run module converts the stored events to these.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace baton::diagnose {

struct StepSample {
    std::int64_t t_ms = 0;  // when the step ended (unix ms)
    std::uint32_t pid = 0;  // the training process that sent it
    int rank = 0;
    double step_ms = 0;  // the whole step
    double wait_ms = 0;  // of which waiting for the next batch
    std::optional<std::int64_t> samples;
};

// The steps of the window, oldest first.
using StepWindow = std::vector<StepSample>;

}  // namespace baton::diagnose
