#include "measure/bench_report.hpp"

#include <algorithm>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/json_writer.hpp"
#include "core/units.hpp"

namespace baton::measure {

std::optional<double> LinkResult::share() const {
    if (!peak || !(*peak > 0)) return std::nullopt;
    return measured / *peak;
}

Cell number_cell(double v, const std::string& text) {
    return Cell{text, v};
}

Cell text_cell(const std::string& text) {
    return Cell{text, std::nullopt};
}

std::string link_figure(double value, const std::string& unit) {
    if (unit == "B/s") return format_rate(value);
    return value >= 100 ? fmt::format("{:.0f} {}", value, unit) : fmt::format("{:.3g} {}", value, unit);
}

std::string link_line(const LinkResult& l) {
    if (l.verdict == "skipped") return fmt::format("{}: skipped: {}", l.link, l.detail);
    std::string s = fmt::format("{}: {}", l.link, link_figure(l.measured, l.unit));
    if (const std::optional<double> share = l.share())
        s += fmt::format(", {:.0f} % of {} ({})", 100 * *share, link_figure(*l.peak, l.unit), l.peak_source);
    else if (!l.peak_source.empty())
        s += fmt::format(" (no peak: {})", l.peak_source);
    if (l.need) s += fmt::format(", need {}", link_figure(*l.need, l.unit));
    s += ": " + l.verdict;
    if (!l.detail.empty()) s += " (" + l.detail + ")";
    return s;
}

namespace {

void table_text(const Table& t, std::string& out) {
    std::vector<std::size_t> width(t.headers.size(), 0);
    for (std::size_t c = 0; c < t.headers.size(); ++c) width[c] = t.headers[c].size();
    for (const auto& row : t.rows)
        for (std::size_t c = 0; c < row.size() && c < width.size(); ++c)
            width[c] = std::max(width[c], row[c].text.size());
    out += t.title + "\n";
    auto left = [&](std::size_t c) { return c < t.align.size() ? t.align[c] == 'l' : c == 0; };
    auto line = [&](const auto& cells, auto text_of) {
        std::string l = " ";
        for (std::size_t c = 0; c < cells.size() && c < width.size(); ++c)
            l += left(c) ? fmt::format("{}{:<{}}", c == 0 ? " " : "  ", text_of(cells[c]), width[c])
                         : fmt::format("{}{:>{}}", c == 0 ? " " : "  ", text_of(cells[c]), width[c]);
        while (!l.empty() && l.back() == ' ') l.pop_back();
        out += l + "\n";
    };
    line(t.headers, [](const std::string& h) { return h; });
    for (const auto& row : t.rows) line(row, [](const Cell& c) { return c.text; });
}

void link_json(JsonWriter& w, const LinkResult& l) {
    w.begin_object();
    w.field("link", l.link);
    w.field("unit", l.unit);
    w.field("measured", l.measured);
    w.optional_field("peak", l.peak);
    w.field("peak_source", l.peak_source);
    w.optional_field("share", l.share());
    w.optional_field("need", l.need);
    w.field("verdict", l.verdict);
    w.field("detail", l.detail);
    w.end_object();
}

void report_members(JsonWriter& w, const BenchReport& r) {
    w.field("bench", r.bench);
    w.field("skipped", r.skipped);
    w.key("notes");
    w.begin_array();
    for (const std::string& n : r.notes) w.value(n);
    w.end_array();
    w.key("footnotes");
    w.begin_array();
    for (const std::string& n : r.footnotes) w.value(n);
    w.end_array();
    w.key("tables");
    w.begin_array();
    for (const Table& t : r.tables) {
        w.begin_object();
        w.field("title", t.title);
        w.key("rows");
        w.begin_array();
        for (const auto& row : t.rows) {
            w.begin_object();
            for (std::size_t c = 0; c < row.size() && c < t.keys.size(); ++c) {
                w.key(t.keys[c]);
                if (row[c].value)
                    w.value(*row[c].value);
                else
                    w.value(row[c].text);
            }
            w.end_object();
        }
        w.end_array();
        w.end_object();
    }
    w.end_array();
    w.key("links");
    w.begin_array();
    for (const LinkResult& l : r.links) link_json(w, l);
    w.end_array();
}

// What to look at next, from the worst verdicts: one line per kind of trouble and cause (the links
// it concerns listed together: "h2d gpu0 pinned, d2h gpu0 pinned: ...").
std::vector<std::string> next_steps(const std::vector<BenchReport>& reports) {
    struct Trouble {
        std::string verdict, detail, bench, links;
        double ok_share = 0.85;
    };
    std::vector<Trouble> troubles;
    for (const BenchReport& r : reports)
        for (const LinkResult& l : r.links) {
            if (l.verdict != "saturated" && l.verdict != "degraded" && l.verdict != "too_slow") continue;
            auto same = [&](const Trouble& t) {
                return t.verdict == l.verdict && t.detail == l.detail && t.bench == r.bench;
            };
            auto it = std::find_if(troubles.begin(), troubles.end(), same);
            if (it == troubles.end())
                troubles.push_back({l.verdict, l.detail, r.bench, l.link, l.ok_share});
            else
                it->links += ", " + l.link;
        }
    std::vector<std::string> out;
    for (const Trouble& t : troubles) {
        if (t.verdict == "saturated")
            out.push_back(
                fmt::format("{}: something else was using it ({}); run the bench again when it is idle, or "
                            "look at it with baton top",
                            t.links, t.detail));
        else if (t.verdict == "degraded")
            out.push_back(
                fmt::format("{}: below {:.0f} % of its peak with nothing else running{}; baton bench {} "
                            "shows the detail",
                            t.links, 100 * t.ok_share, t.detail.empty() ? "" : " (" + t.detail + ")", t.bench));
        else
            out.push_back(
                fmt::format("{}: slower than the job needs; move the data to a faster disk or cache it in "
                            "memory (docs/bench.md)",
                            t.links));
    }
    return out;
}

}  // namespace

std::string report_text(const BenchReport& r) {
    std::string out;
    for (const std::string& n : r.notes) out += n + "\n";
    for (const Table& t : r.tables) {
        if (!out.empty()) out += "\n";
        table_text(t, out);
    }
    if (!r.footnotes.empty()) out += "\n";
    for (const std::string& n : r.footnotes) out += n + "\n";
    if (!r.links.empty()) out += "\n";
    for (const LinkResult& l : r.links) out += link_line(l) + "\n";
    return out;
}

std::string report_json(const BenchReport& r) {
    std::string out;
    {
        JsonWriter w(out);
        w.begin_object();
        report_members(w, r);
        w.end_object();
    }
    out.push_back('\n');
    return out;
}

std::string summary_text(const std::vector<BenchReport>& reports) {
    Table t;
    t.title = "baton bench: each link against what its hardware promises";
    t.headers = {"link", "measured", "peak", "share", "verdict", "peak from / detail"};
    t.align = "lrrrll";
    for (const BenchReport& r : reports)
        for (const LinkResult& l : r.links) {
            const std::optional<double> share = l.share();
            std::string why = l.peak_source;
            if (!l.detail.empty()) why += (why.empty() ? "" : "; ") + l.detail;
            const bool skipped = l.verdict == "skipped";
            t.rows.push_back({text_cell(l.link), text_cell(skipped ? "-" : link_figure(l.measured, l.unit)),
                              text_cell(l.peak   ? link_figure(*l.peak, l.unit)
                                        : l.need ? "need " + link_figure(*l.need, l.unit)
                                                 : "-"),
                              text_cell(share ? fmt::format("{:.0f} %", 100 * *share) : "-"), text_cell(l.verdict),
                              text_cell(why)});
        }
    std::string out;
    for (const BenchReport& r : reports)
        for (const std::string& n : r.notes) out += n + "\n";
    if (!out.empty()) out += "\n";
    table_text(t, out);
    const std::vector<std::string> next = next_steps(reports);
    bool judged = false;
    for (const BenchReport& r : reports)
        for (const LinkResult& l : r.links) judged = judged || l.verdict == "ok";
    out += !next.empty() ? "\nnext:\n"
           : judged      ? "\nnext: every link judged delivers what its hardware promises.\n"
                         : "\nnext: no link here reports a peak to judge against (a VM, a virtual disk, no GPU); the "
                           "figures stand alone.\n";
    for (const std::string& n : next) out += "  " + n + "\n";
    return out;
}

std::string summary_json(const std::vector<BenchReport>& reports) {
    std::string out;
    {
        JsonWriter w(out);
        w.begin_object();
        w.key("benches");
        w.begin_array();
        for (const BenchReport& r : reports) {
            w.begin_object();
            report_members(w, r);
            w.end_object();
        }
        w.end_array();
        w.key("next");
        w.begin_array();
        for (const std::string& n : next_steps(reports)) w.value(n);
        w.end_array();
        w.end_object();
    }
    out.push_back('\n');
    return out;
}

}  // namespace baton::measure
