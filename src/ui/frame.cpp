#include "ui/frame.hpp"

namespace baton::ui {

Style style_for(diagnose::Level l) {
    switch (l) {
        case diagnose::Level::low:
            return Style::low;
        case diagnose::Level::best:
            return Style::best;
        case diagnose::Level::elevated:
            return Style::elevated;
        case diagnose::Level::alarm:
            return Style::alarm;
        case diagnose::Level::unknown:
            break;
    }
    return Style::dim;
}

const char* style_name(Style s) {
    switch (s) {
        case Style::plain:
            return "plain";
        case Style::dim:
            return "dim";
        case Style::title:
            return "title";
        case Style::low:
            return "low";
        case Style::best:
            return "best";
        case Style::elevated:
            return "elevated";
        case Style::alarm:
            return "alarm";
        case Style::column:
            return "column";
        case Style::selected:
            return "selected";
        case Style::status:
            return "status";
    }
    return "plain";
}

namespace {

bool is_continuation(unsigned char c) {
    return (c & 0xC0) == 0x80;
}

}  // namespace

int display_width(std::string_view s) {
    int w = 0;
    for (char c : s) w += is_continuation(static_cast<unsigned char>(c)) ? 0 : 1;
    return w;
}

std::string clip(std::string_view s, int width) {
    if (width <= 0) return {};
    int w = 0;
    std::size_t i = 0;
    for (; i < s.size(); ++i) {
        if (is_continuation(static_cast<unsigned char>(s[i]))) continue;
        if (w == width) break;
        ++w;
    }
    return std::string(s.substr(0, i));
}

std::string pad_right(std::string_view s, int width) {
    std::string out = clip(s, width);
    out.append(static_cast<std::size_t>(std::max(0, width - display_width(out))), ' ');
    return out;
}

std::string pad_left(std::string_view s, int width) {
    std::string c = clip(s, width);
    std::string out(static_cast<std::size_t>(std::max(0, width - display_width(c))), ' ');
    return out.append(c);
}

int Line::width() const {
    int w = 0;
    for (const Span& s : spans) w += display_width(s.text);
    return w;
}

namespace {

template <typename Mark>
std::string render(const Frame& f, Mark mark) {
    std::string out;
    for (int row = 0; row < f.height; ++row) {
        int used = 0;
        if (row < static_cast<int>(f.lines.size())) {
            const Line& l = f.lines[static_cast<std::size_t>(row)];
            for (const Span& s : l.spans) {
                std::string text = clip(s.text, f.width - used);
                used += display_width(text);
                mark(out, text, s.style);
            }
            if (used < f.width && l.fill != Style::plain)
                mark(out, std::string(static_cast<std::size_t>(f.width - used), ' '), l.fill);
        }
        while (!out.empty() && out.back() == ' ') out.pop_back();  // no trailing blanks in text output
        out.push_back('\n');
    }
    return out;
}

}  // namespace

std::string render_plain(const Frame& f) {
    return render(f, [](std::string& out, const std::string& text, Style) { out.append(text); });
}

std::string render_marked(const Frame& f) {
    return render(f, [](std::string& out, const std::string& text, Style s) {
        if (text.empty()) return;
        if (s == Style::plain) {
            out.append(text);
            return;
        }
        out.append("{").append(style_name(s)).append("}").append(text).append("{/}");
    });
}

}  // namespace baton::ui
