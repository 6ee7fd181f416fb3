// What a bench found: its detail tables (one row per size, thread count, ...), and one result per
// link with its verdict. Every bench returns one; the CLI prints it as text or JSON, the history
// keeps the link results (kind `bench`), and `baton bench` with no subcommand gathers the links
// of several into one summary table. docs/bench.md documents the JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace baton::measure {

// One measured link.
struct LinkResult {
    std::string link;                     // "memory triad", "disk seq cold", "h2d gpu0 pinned", "net 127.0.0.1:5301"
    double measured = 0;                  // in `unit`: bytes per second, but scaling's samples (or steps) per second
    std::optional<double> peak;           // what the hardware promises (scaling: linear scaling from the smallest size)
    std::string peak_source;              // where the peak comes from: "PCIe 5.0 x16 (NVML)"; why none is known
    std::optional<double> need;           // what a training job needs (disk --need), bytes per second
    std::string verdict;                  // ok, degraded, saturated, measured, too_slow, skipped
    std::string detail;                   // what saturated it, what to look at next
    double ok_share = 0.85;               // the share of the peak that counts as ok ([bench] ok_share)
    std::string unit = "B/s";             // "B/s", "samples/s", "steps/s"
    std::optional<double> share() const;  // measured / peak
};

// A table cell: its text for people and, for JSON, its value in base units (none: the text).
struct Cell {
    std::string text;
    std::optional<double> value;
};
Cell number_cell(double v, const std::string& text);
Cell text_cell(const std::string& text);

struct Table {
    std::string title;                 // "copy bandwidth by size (GB/s)"
    std::vector<std::string> keys;     // JSON member names: "size_bytes", "h2d_pinned_bytes_per_second"
    std::vector<std::string> headers;  // column heads for people: "size", "h2d pinned"
    std::vector<std::vector<Cell>> rows;
    std::string align;  // per column, 'l' or 'r'; empty: the first left, the others right
};

struct BenchReport {
    std::string bench;               // "memory", "disk", "h2d", "allreduce", "net", "scaling"
    std::vector<std::string> notes;  // printed above the tables: the file, the topology, a skip's reason
    std::vector<Table> tables;
    std::vector<std::string> footnotes;  // printed below the tables: nccl-tests' average bus bandwidth
    std::vector<LinkResult> links;
    bool skipped = false;  // nothing could be measured (no CUDA driver, no NCCL): notes say why
};

// The verdict line of a link: "memory triad: 18.2 GB/s, 71 % of 25.6 GB/s (4 x DDR5-4800 ...):
// degraded". `ok_share` is printed as the threshold when the verdict is below it.
std::string link_line(const LinkResult& l);
// A figure of a link in its unit: "54.8 GB/s", "1234 samples/s".
std::string link_figure(double value, const std::string& unit);

// The report for people: notes, tables, then one verdict line per link.
std::string report_text(const BenchReport& r);
// The report as one JSON object (docs/bench.md).
std::string report_json(const BenchReport& r);

// The summary of several benches: one row per link (link, measured, peak, source, share,
// verdict) and what to look at next.
std::string summary_text(const std::vector<BenchReport>& reports);
std::string summary_json(const std::vector<BenchReport>& reports);

}  // namespace baton::measure
