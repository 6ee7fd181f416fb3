#include "sample/linux/pressure.hpp"

#include "core/text_parse.hpp"

namespace baton::os {

namespace {

std::optional<PressureLine> parse_line(std::string_view rest) {
    PressureLine p;
    int seen = 0;
    for (std::string_view w = text::take_word(rest); !w.empty(); w = text::take_word(rest)) {
        std::size_t eq = w.find('=');
        if (eq == std::string_view::npos) return std::nullopt;
        std::string_view k = w.substr(0, eq), v = w.substr(eq + 1);
        if (k == "total") {
            auto t = text::take_u64(v);
            if (!t) return std::nullopt;
            p.total_us = *t;
            ++seen;
            continue;
        }
        auto d = text::take_double(v);
        if (!d) return std::nullopt;
        if (k == "avg10")
            p.avg10 = *d, ++seen;
        else if (k == "avg60")
            p.avg60 = *d, ++seen;
        else if (k == "avg300")
            p.avg300 = *d, ++seen;
    }
    if (seen < 4) return std::nullopt;
    return p;
}

}  // namespace

bool parse_pressure(std::string_view text, PressureResource& out) {
    out = PressureResource{};
    while (!text.empty()) {
        std::string_view rest = text::take_line(text);
        std::string_view kind = text::take_word(rest);
        if (kind == "some")
            out.some = parse_line(rest);
        else if (kind == "full")
            out.full = parse_line(rest);
    }
    return out.some.has_value() || out.full.has_value();
}

}  // namespace baton::os
