// Whole small files as text, for the benches' sysfs lookups and the ranks' logs.
#pragma once

#include <string>

#include "core/files.hpp"

namespace baton::measure {

// The file's bytes; "" when it cannot be read (sysfs files that are absent mean "unknown" here).
std::string file_text(const std::string& path);
// A sysfs value is core/files.hpp's file_value.
using baton::file_value;

}  // namespace baton::measure
