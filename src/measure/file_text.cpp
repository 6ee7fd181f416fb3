#include "measure/file_text.hpp"

#include <limits>

#include "core/files.hpp"

namespace baton::measure {

std::string file_text(const std::string& path) {
    // (a rank's log can be large: no size bound here, unlike a sysfs value)
    return read_small_file(path, std::numeric_limits<std::size_t>::max()).value_or("");
}

}  // namespace baton::measure
