#include "measure/file_text.hpp"

#include <fstream>
#include <sstream>

namespace baton::measure {

std::string file_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string file_value(const std::string& path) {
    std::string t = file_text(path);
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ' || t.back() == '\t')) t.pop_back();
    return t;
}

}  // namespace baton::measure
