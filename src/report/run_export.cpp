#include "report/run_export.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "sample/gpu/throttle_reasons.hpp"

namespace baton::report {

namespace {

// One exported column: its name and its value in a sample (nullopt: not recorded). Values are
// in base units, like the snapshot JSON: bytes, bytes per second, percent, seconds.
struct ExportColumn {
    const char* name;
    std::optional<double> (*value)(const store::RunSample&);
};
struct ExportGpuColumn {
    const char* name;
    std::optional<double> (*value)(const store::RunSample::Gpu&);
};

const ExportColumn kExportColumns[] = {
    {"cpu_percent", [](const store::RunSample& s) -> std::optional<double> { return s.cpu_percent; }},
    {"iowait_percent", [](const store::RunSample& s) -> std::optional<double> { return s.iowait_percent; }},
    {"memory_used_bytes", [](const store::RunSample& s) -> std::optional<double> { return s.memory_used_bytes; }},
    {"swap_bytes_per_second",
     [](const store::RunSample& s) -> std::optional<double> { return s.swap_bytes_per_second; }},
    {"job_cpu_percent", [](const store::RunSample& s) -> std::optional<double> { return s.job_cpu_percent; }},
    {"job_rss_bytes", [](const store::RunSample& s) -> std::optional<double> { return s.job_rss_bytes; }},
    {"disk_read_bytes_per_second", [](const store::RunSample& s) { return s.disk_read_bytes_per_second; }},
    {"disk_write_bytes_per_second", [](const store::RunSample& s) { return s.disk_write_bytes_per_second; }},
};

const ExportGpuColumn kExportGpuColumns[] = {
    {"utilization_percent",
     [](const store::RunSample::Gpu& g) -> std::optional<double> { return g.utilization_percent; }},
    {"memory_used_bytes", [](const store::RunSample::Gpu& g) -> std::optional<double> { return g.memory_used_bytes; }},
    {"sm_activity_percent", [](const store::RunSample::Gpu& g) { return g.sm_activity_percent; }},
    {"power_watts", [](const store::RunSample::Gpu& g) { return g.power_watts; }},
    {"temperature_celsius", [](const store::RunSample::Gpu& g) { return g.temperature_celsius; }},
    {"sm_clock_mhz", [](const store::RunSample::Gpu& g) { return g.sm_clock_mhz; }},
};

// The clock-event reasons of a GPU sample, when recorded (sample version 3).
std::optional<std::vector<std::string>> throttle_reasons(const store::RunSample::Gpu& g) {
    if (!g.throttle_reasons) return std::nullopt;
    return decode_throttle_reasons(*g.throttle_reasons);
}

// A number as exported: integers without a fraction (bytes), others to float precision.
std::string number(double v) {
    if (std::abs(v) >= 1e4 || v == std::floor(v)) return fmt::format("{:.0f}", v);
    return fmt::format("{:.6g}", v);
}

std::string cell(std::optional<double> v) {
    return v ? number(*v) : std::string();
}

}  // namespace

std::string export_samples(const std::vector<store::RunSample>& samples, const std::string& format) {
    std::vector<unsigned> gpus;
    for (const store::RunSample& s : samples)
        for (const store::RunSample::Gpu& g : s.gpus)
            if (std::find(gpus.begin(), gpus.end(), g.index) == gpus.end()) gpus.push_back(g.index);
    std::sort(gpus.begin(), gpus.end());
    std::string out;
    if (format == "csv") {
        out += "time";
        for (const ExportColumn& c : kExportColumns) out += fmt::format(",{}", c.name);
        for (unsigned g : gpus)
            for (const ExportGpuColumn& c : kExportGpuColumns) out += fmt::format(",gpu{}_{}", g, c.name);
        for (unsigned g : gpus) out += fmt::format(",gpu{}_throttle_reasons", g);
        out += "\n";
        for (const store::RunSample& s : samples) {
            out += rfc3339_utc(s.t_ms);
            for (const ExportColumn& c : kExportColumns) out += "," + cell(c.value(s));
            for (unsigned g : gpus) {
                auto it = std::find_if(s.gpus.begin(), s.gpus.end(),
                                       [&](const store::RunSample::Gpu& x) { return x.index == g; });
                for (const ExportGpuColumn& c : kExportGpuColumns)
                    out += "," + (it == s.gpus.end() ? std::string() : cell(c.value(*it)));
            }
            for (unsigned g : gpus) {  // the reasons joined by ';' (none: empty; not recorded: empty too)
                auto it = std::find_if(s.gpus.begin(), s.gpus.end(),
                                       [&](const store::RunSample::Gpu& x) { return x.index == g; });
                std::string reasons;
                if (it != s.gpus.end())
                    if (auto r = throttle_reasons(*it))
                        for (const std::string& n : *r) reasons += (reasons.empty() ? "" : ";") + n;
                out += "," + reasons;
            }
            out += "\n";
        }
        return out;
    }
    for (const store::RunSample& s : samples) {
        JsonWriter w(out);
        w.begin_object();
        w.field("time", rfc3339_utc(s.t_ms));
        for (const ExportColumn& c : kExportColumns)
            if (std::optional<double> v = c.value(s)) {
                w.key(c.name);
                w.value(*v);
            }
        w.key("gpus");
        w.begin_array();
        for (const store::RunSample::Gpu& g : s.gpus) {
            w.begin_object();
            w.field("index", static_cast<unsigned>(g.index));
            for (const ExportGpuColumn& c : kExportGpuColumns)
                if (std::optional<double> v = c.value(g)) {
                    w.key(c.name);
                    w.value(*v);
                }
            if (auto reasons = throttle_reasons(g)) {
                w.key("throttle_reasons");
                w.begin_array();
                for (const std::string& n : *reasons) w.value(n);
                w.end_array();
            }
            w.end_object();
        }
        w.end_array();
        w.end_object();
        w.finish();
        out.push_back('\n');
    }
    return out;
}

// The hook's steps (python/baton), one per line or row, in seconds.
std::string export_steps(const std::vector<store::StepEvent>& steps, const std::string& format) {
    std::string out;
    if (format == "csv") out += "time,pid,rank,step,step_seconds,data_wait_seconds,samples\n";
    for (const store::StepEvent& e : steps) {
        if (format == "csv") {
            out += fmt::format("{},{},{},{},{},{},{}\n", rfc3339_utc(e.t_ms), e.pid, e.rank, e.step,
                               number(e.step_ms / 1000.0), number(e.wait_ms / 1000.0),
                               e.samples ? std::to_string(*e.samples) : "");
            continue;
        }
        JsonWriter w(out);
        w.begin_object();
        w.field("time", rfc3339_utc(e.t_ms));
        w.field("pid", e.pid);
        w.field("rank", e.rank);
        w.field("step", e.step);
        w.field("step_seconds", e.step_ms / 1000.0);
        w.field("data_wait_seconds", e.wait_ms / 1000.0);
        w.optional_field("samples", e.samples);
        w.end_object();
        w.finish();
        if (!e.data.empty() && out.back() == '}') {  // the hook's own figures (memory stats, the scaler), as sent
            out.pop_back();
            out += ",\"data\":" + e.data + "}";
        }
        out.push_back('\n');
    }
    return out;
}
}  // namespace baton::report
