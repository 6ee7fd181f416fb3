// Whole small files as text, for the benches' sysfs lookups and the ranks' logs.
#pragma once

#include <string>

namespace baton::measure {

// The file's bytes; "" when it cannot be read (sysfs files that are absent mean "unknown" here).
std::string file_text(const std::string& path);
// The same with trailing newlines and blanks removed: a sysfs value ("16.0 GT/s PCIe").
std::string file_value(const std::string& path);

}  // namespace baton::measure
