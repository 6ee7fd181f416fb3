// `baton tune`'s result for the user: the table of what was tried with the spread of each, the winner
// with its measured speed-up and the lines to paste (text), or one JSON object (--json; docs/tune.md).
#pragma once

#include <string>

#include "tune/tuner.hpp"

namespace baton::tune {

// `command`: the command as the user typed it (for the `baton run --tuned` line).
std::string tune_text(const TuneResult& r, const std::string& command);
std::string tune_json(const TuneResult& r, const std::string& command);

// "ended at its steps", "crashed", ... (the JSON's trial "end").
const char* end_name(TrialEnd e);

}  // namespace baton::tune
