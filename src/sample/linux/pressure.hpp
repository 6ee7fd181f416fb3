// Parser for one /proc/pressure/{cpu,memory,io} file (pressure stall information, kernel >= 4.20).
#pragma once

#include <string_view>

#include "sample/snapshot.hpp"

namespace baton::os {

// Lines look like "some avg10=0.12 avg60=0.05 avg300=0.00 total=123456". False when neither
// a "some" nor a "full" line parses.
bool parse_pressure(std::string_view text, PressureResource& out);

}  // namespace baton::os
