// Whether a setting beat the script's own, beyond the noise the trials measured. Trials of every
// setting are interleaved and repeated (a machine that slows down or speeds up over the tuning hits
// them all alike); the spread of each setting's repetitions is the noise, and a setting wins only
// when its gain over the baseline exceeds it. "Nothing beats your settings beyond noise" is an answer.
// Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace baton::tune {

struct VerdictRule {
    double min_gain = 0.03;  // below 3 % nobody should change their script
};

struct SettingVerdict {
    std::vector<double> values;  // the measure of each of its trials that ran to the end (higher is better)
    double median = 0, low = 0, high = 0;
    double spread = 0;  // (high - low) / median: the noise of its repetitions
    double gain = 0;    // median / the baseline's median - 1
    bool wins = false;
    std::string why;  // why it does not win (empty when it wins, and for the baseline)
};

struct Verdict {
    std::vector<SettingVerdict> settings;  // [0]: the baseline (the script's own settings)
    std::optional<std::size_t> winner;     // the winning setting with the best median
};

// values[i]: the measures of setting i's completed trials, [0] the baseline's.
Verdict judge(const std::vector<std::vector<double>>& values, const VerdictRule& rule = {});

}  // namespace baton::tune
