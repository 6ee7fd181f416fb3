// What `baton tune` tries and `baton run --tuned` applies: settings of the training process that the
// shim sets with no change to the script (python/baton/_tune.py reads them from BATON_TUNE). An unset
// field is the script's own choice.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace baton::tune {

inline constexpr const char* kTuneVariable = "BATON_TUNE";

struct Settings {
    // Every DataLoader the script makes.
    std::optional<int> num_workers;
    std::optional<bool> pin_memory;
    std::optional<bool> persistent_workers;
    std::optional<int> prefetch_factor;
    std::optional<int> batch_size;  // --allow batch-size only: it changes the optimisation
    // The process.
    std::optional<int> threads;  // torch.set_num_threads: intra-op threads against the workers
    std::optional<bool> cudnn_benchmark;
    std::optional<bool> tf32;                 // TF32 matmuls and convolutions (Ampere and later)
    std::optional<std::string> autocast;      // "bfloat16": the main thread's CUDA ops under torch.autocast
    std::optional<bool> expandable_segments;  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True

    bool empty() const;
    // The fields of `over` that are set replace these.
    Settings merged(const Settings& over) const;
    bool operator==(const Settings&) const = default;
};

// Changes what the model computes (precision): compared on the script's loss before it may win.
bool changes_numerics(const Settings& s);
// Changes the optimisation itself (the batch size): samples/s, not steps/s, is then the measure.
bool changes_optimisation(const Settings& s);

// How many settings `s` sets (fewer is simpler: of winners within the noise, the simplest wins).
std::size_t changed_count(const Settings& s);
// "num_workers=4 pin_memory=True"; "your settings" when empty.
std::string label(const Settings& s);
// {"num_workers":4,"pin_memory":true}: what BATON_TUNE holds and the history keeps.
std::string to_json(const Settings& s);
// The same back; an error names the key that is wrong (unknown keys are errors: a saved setting this
// baton does not know must not be dropped silently).
Result<Settings> settings_from_json(std::string_view text);

// The lines a user pastes to keep the settings without baton: the DataLoader's keyword arguments, the
// calls at the top of the script, the environment variable.
std::vector<std::string> paste_lines(const Settings& s);

// The environment the command gets for `s`: BATON_TUNE, and PYTORCH_CUDA_ALLOC_CONF for
// expandable_segments (appended to `alloc_conf`, the inherited value, when it has one).
std::vector<std::pair<std::string, std::string>> settings_environment(const Settings& s,
                                                                      const std::optional<std::string>& alloc_conf);

}  // namespace baton::tune
