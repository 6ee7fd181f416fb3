// The JSON encoder and the terminal-safe views, on any bytes: the JSON is always accepted by a
// strict parser (and gives back valid text unchanged); printable() and escaped_line() never let a
// control character through, and escaped_line() is one line.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "core/json_writer.hpp"
#include "core/printable.hpp"

namespace {

bool valid_utf8(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = baton::utf8_sequence_length(s, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

bool has_control(const std::string& s, bool lines_allowed) {
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (lines_allowed && (c == '\n' || c == '\t')) continue;
        if (c < 0x20 || c == 0x7F) return true;
        if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xA0) return true;
    }
    return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string in(reinterpret_cast<const char*>(data), size);
    std::string json;
    baton::JsonWriter::append_escaped(json, in);
    if (!nlohmann::json::accept(json) || has_control(json, false)) std::abort();
    if (valid_utf8(in) && nlohmann::json::parse(json).get<std::string>() != in) std::abort();
    const std::string p = baton::printable(in), t = baton::printable_text(in), e = baton::escaped_line(in);
    if (has_control(p, false) || has_control(t, true) || has_control(e, false)) std::abort();
    if (!valid_utf8(p) || !valid_utf8(t) || !valid_utf8(e)) std::abort();
    return 0;
}
