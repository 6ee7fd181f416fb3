#include "ui/line_fit.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

namespace baton::ui {

std::string compact_bytes(double b) {
    static constexpr const char* units[] = {"B", "K", "M", "G", "T", "P"};
    int u = 0;
    while (std::fabs(b) >= 1000 && u < 5) {  // 1000, not 1024: "1023K" would not fit 5 columns
        b /= 1024;
        ++u;
    }
    if (u == 0) return fmt::format("{:.0f}B", b);
    if (b >= 10 || b == 0) return fmt::format("{:.0f}{}", b, units[u]);
    return fmt::format("{:.1f}{}", b, units[u]);
}

std::string bar(double percent, int width, bool ascii) {
    if (width <= 0) return {};
    if (!(percent >= 0)) percent = 0;  // also NaN
    percent = std::min(percent, 100.0);
    std::string out;
    if (ascii) {
        const int full = static_cast<int>(std::lround(percent / 100.0 * width));
        out.append(static_cast<std::size_t>(full), '|');
        out.append(static_cast<std::size_t>(width - full), ' ');
        return out;
    }
    static constexpr const char* eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    const int total = static_cast<int>(std::lround(percent / 100.0 * width * 8));
    const int full = total / 8;
    const int rest = total % 8;
    for (int i = 0; i < full; ++i) out.append("█");
    int used = full;
    if (rest > 0 && used < width) {
        out.append(eighths[rest]);
        ++used;
    }
    out.append(static_cast<std::size_t>(width - used), ' ');
    return out;
}

std::string percent_text(std::optional<double> v, int width) {
    if (!v) return pad_left("-", width) + "%";
    return pad_left(fmt::format("{:.0f}", *v), width) + "%";
}

std::string rate_text(std::optional<double> v) {
    return v ? compact_bytes(*v) + "/s" : "-";
}

std::string duration_text(double seconds) {
    const auto s = static_cast<long long>(seconds);
    if (s >= 86400) return fmt::format("{}d {}h", s / 86400, s % 86400 / 3600);
    if (s >= 3600) return fmt::format("{}h {}m", s / 3600, s % 3600 / 60);
    return fmt::format("{}m {}s", s / 60, s % 60);
}

std::string short_gpu_name(const std::string& name) {
    std::string_view n = name;
    for (std::string_view prefix : {"NVIDIA ", "GeForce "})
        if (n.substr(0, prefix.size()) == prefix) n.remove_prefix(prefix.size());
    return printable(n);
}

Piece text_piece(std::string text, Style style, int priority, bool space) {
    Piece p;
    p.text = std::move(text);
    p.style = style;
    p.priority = priority;
    p.space_before = space;
    return p;
}

Piece bar_piece(double percent, Style style, int min_width, int max_width, int priority) {
    Piece p;
    p.is_bar = true;
    p.percent = percent;
    p.style = style;
    p.bar_min = min_width;
    p.bar_max = max_width;
    p.priority = priority;
    return p;
}

Line fit_pieces(std::vector<Piece> pieces, int width, bool ascii) {
    auto used = [&] {
        int w = 0;
        bool first = true;
        for (const Piece& p : pieces) {
            w += (p.space_before && !first) ? 1 : 0;
            w += p.is_bar ? p.bar_min + 2 : display_width(p.text);
            first = false;
        }
        return w;
    };
    while (used() > width) {
        auto victim = pieces.end();
        for (auto it = pieces.begin(); it != pieces.end(); ++it)
            if (it->priority > 0 && (victim == pieces.end() || it->priority < victim->priority)) victim = it;
        if (victim == pieces.end()) break;  // nothing left to drop: the frame clips the rest
        pieces.erase(victim);
    }
    int extra = std::max(0, width - used());
    std::vector<Piece*> bars;
    for (Piece& p : pieces)
        if (p.is_bar) bars.push_back(&p);
    std::vector<int> bar_width;
    for (Piece* p : bars) bar_width.push_back(p->bar_min);
    for (bool grew = true; extra > 0 && grew;) {  // one column at a time, round robin
        grew = false;
        for (std::size_t i = 0; i < bars.size() && extra > 0; ++i) {
            if (bar_width[i] >= bars[i]->bar_max) continue;
            ++bar_width[i];
            --extra;
            grew = true;
        }
    }
    Line line;
    std::size_t b = 0;
    bool first = true;
    for (const Piece& p : pieces) {
        if (p.space_before && !first) line.add(" ");
        first = false;
        if (p.is_bar) {
            line.add("[", Style::dim);
            line.add(bar(p.percent, bar_width[b++], ascii), p.style);
            line.add("]", Style::dim);
        } else {
            line.add(p.text, p.style);
        }
    }
    return line;
}

}  // namespace baton::ui
