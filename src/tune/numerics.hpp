// Whether a setting that changes the arithmetic (TF32, bfloat16) changed what the script learns: its
// loss, read by the hook at each backward() with no sync, against the script's own settings'. The
// trials start from the script's own start each time, so their losses follow the same course unless the
// setting bends it; how far the baseline's own repetitions differ is the noise. Pure.
#pragma once

#include <string>
#include <vector>

namespace baton::tune {

struct NumericsCheck {
    bool same = false;
    std::string why;  // why not, or how close
};

// runs: each trial's losses in order. The mean of a trial's last half is compared.
NumericsCheck compare_losses(const std::vector<std::vector<double>>& baseline,
                             const std::vector<std::vector<double>>& candidate);

}  // namespace baton::tune
