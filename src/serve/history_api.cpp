#include "serve/history_api.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "core/json_writer.hpp"
#include "core/text_parse.hpp"
#include "serve/node_metrics.hpp"
#include "serve/service.hpp"
#include "report/run_report.hpp"
#include "store/run_json.hpp"
#include "store/history_metrics.hpp"
#include "store/history_runs.hpp"

namespace baton::serve {

namespace {

constexpr std::size_t kMaxPoints = 20000;

// A time parameter: Unix seconds, or a negative number of seconds before now ("-900").
std::optional<std::int64_t> time_param(const std::string& text, std::int64_t now_ms) {
    if (text.empty() || text.size() > 24) return std::nullopt;
    const bool relative = text[0] == '-';
    const std::string digits = relative ? text.substr(1) : text;
    if (digits.empty() || digits.find_first_not_of("0123456789.") != std::string::npos ||
        std::count(digits.begin(), digits.end(), '.') > 1 || digits.front() == '.' || digits.back() == '.')
        return std::nullopt;
    const double v = std::stod(digits);
    if (!std::isfinite(v) || v > 1e11) return std::nullopt;
    const auto ms = static_cast<std::int64_t>(v * 1000);
    return relative ? now_ms - ms : ms;
}

struct Bucket {
    double sum = 0, min = 0, max = 0;
    std::size_t n = 0;
    void add(double avg, double lo, double hi, std::size_t weight = 1) {
        if (n == 0) {
            min = lo;
            max = hi;
        }
        sum += avg * static_cast<double>(weight);
        min = std::min(min, lo);
        max = std::max(max, hi);
        n += weight;
    }
};

}  // namespace

HttpResponse history_response(const HttpRequest& r, const HistorySources& src) {
    const std::int64_t now = src.now_ms;
    auto param = [&](const char* k) {
        auto it = r.query.find(k);
        return it == r.query.end() ? std::string() : it->second;
    };
    const std::string metric = param("metric");
    HttpResponse out;
    out.content_type = "application/json";
    JsonWriter w(out.body);
    if (metric.empty()) {  // the catalogue
        std::map<std::pair<std::string, std::string>, bool> all;
        for (const auto& key : src.memory->series()) all[key] = true;
        if (src.store)
            if (auto stored = src.store->minute_table().metric_series(); stored.ok())
                for (const store::MetricMinute& m : *stored) all[{m.metric, m.subject}] = true;
        w.begin_object();
        w.field("interval_seconds", src.interval_seconds);
        w.key("series");
        w.begin_array();
        for (const auto& [key, unused] : all) {
            w.begin_object();
            w.field("metric", key.first);
            w.field("subject", key.second);
            w.end_object();
        }
        w.end_array();
        w.end_object();
        w.finish();
        out.body.push_back('\n');
        return out;
    }
    if (!known_metric(metric)) return json_error(404, "no metric '" + metric + "' (GET /api/v1/history lists them)");
    const std::string subject = param("subject").empty() ? "host" : param("subject");
    const std::optional<std::int64_t> from = param("from").empty() ? now - 900000 : time_param(param("from"), now);
    const std::optional<std::int64_t> to = param("to").empty() ? now : time_param(param("to"), now);
    if (!from || !to) return json_error(400, "from and to are Unix seconds, or negative seconds before now (-900)");
    if (*from > *to) return json_error(400, "from is after to");
    double step = src.interval_seconds;
    if (!param("step").empty()) {
        const std::optional<std::int64_t> s = time_param(param("step"), 0);
        if (!s || *s <= 0) return json_error(400, "step is a positive number of seconds");
        step = static_cast<double>(*s) / 1000.0;
    }
    // Memory holds the last minutes at full resolution; a range reaching further back comes from
    // the database, a minute a row (then memory completes it after the last stored minute).
    const bool from_store =
        src.store && *from < now - static_cast<std::int64_t>(src.memory->keep_seconds() * 1000) - 1000;
    if (from_store) step = std::max(step, 60.0);
    const double points = static_cast<double>(*to - *from) / 1000.0 / step;
    if (points > static_cast<double>(kMaxPoints))
        return json_error(400, "that would be more than 20000 points: give a larger step");

    // subject=* : every subject of the metric (what the live page asks, one request a metric).
    std::vector<std::string> subjects;
    if (subject == "*") {
        std::map<std::string, bool> all;
        for (const auto& [m, subj] : src.memory->series())
            if (m == metric) all[subj] = true;
        if (from_store)
            if (auto stored = src.store->minute_table().metric_series(); stored.ok())
                for (const store::MetricMinute& m : *stored)
                    if (m.metric == metric) all[m.subject] = true;
        for (const auto& [subj, unused] : all) subjects.push_back(subj);
    } else {
        subjects.push_back(subject);
    }

    const auto step_ms = static_cast<std::int64_t>(step * 1000);
    auto bucket_of = [&](std::int64_t t) { return *from + (t - *from) / step_ms * step_ms; };
    auto write_points = [&](const std::string& subj) -> std::optional<std::string> {
        std::map<std::int64_t, Bucket> buckets;  // bucket start (ms) -> values
        std::int64_t memory_from = *from;
        if (from_store) {
            Result<std::vector<store::MetricMinute>> rows =
                src.store->minute_table().metric_minutes(metric, subj, *from / 60000, *to / 60000);
            if (!rows.ok()) return rows.error().message;
            for (const store::MetricMinute& m : *rows) {
                const std::int64_t t = std::max(m.minute * 60000, *from);
                buckets[bucket_of(t)].add(m.avg, m.min, m.max, 60);
                memory_from = std::max(memory_from, (m.minute + 1) * 60000);  // memory takes over after it
            }
        }
        for (const Point& p : src.memory->range(metric, subj, memory_from, *to))
            buckets[bucket_of(p.t_ms)].add(p.value, p.value, p.value);
        w.key("points");  // [time (Unix seconds), average, minimum, maximum]
        w.begin_array();
        for (const auto& [t, b] : buckets) {
            w.begin_array();
            w.value(static_cast<double>(t) / 1000.0);
            w.value(b.sum / static_cast<double>(b.n));
            w.value(b.min);
            w.value(b.max);
            w.end_array();
        }
        w.end_array();
        return std::nullopt;
    };

    w.begin_object();
    w.field("metric", metric);
    if (subject != "*") w.field("subject", subject);
    w.field("from", static_cast<double>(*from) / 1000.0);
    w.field("to", static_cast<double>(*to) / 1000.0);
    w.field("step", step);
    w.field("source", from_store ? "store" : "memory");
    if (subject == "*") {
        w.key("series");
        w.begin_array();
        for (const std::string& subj : subjects) {
            w.begin_object();
            w.field("subject", subj);
            if (auto e = write_points(subj)) return json_error(500, *e);
            w.end_object();
        }
        w.end_array();
    } else if (auto e = write_points(subject)) {
        return json_error(500, *e);
    }
    w.end_object();
    w.finish();
    out.body.push_back('\n');
    return out;
}

HttpResponse runs_response(const HttpRequest& r, store::History* store) {
    if (!store) return json_error(404, "baton serve runs without a history database (--db)");
    HttpResponse out;
    out.content_type = "application/json";
    const std::string prefix = "/api/v1/runs";
    if (r.path == prefix || r.path == prefix + "/") {
        Result<std::vector<store::RunRecord>> runs = store->run_reads().runs();
        if (!runs.ok()) return json_error(500, runs.error().message);
        out.body = "{\"runs\":[";
        for (std::size_t i = 0; i < runs->size(); ++i) {
            if (i) out.body.push_back(',');
            store::append_run_json((*runs)[i], out.body);
        }
        out.body += "]}\n";
        return out;
    }
    std::string id_text = r.path.substr(prefix.size() + 1);
    const std::string report_suffix = "/report";
    const bool report =
        id_text.size() > report_suffix.size() &&
        id_text.compare(id_text.size() - report_suffix.size(), report_suffix.size(), report_suffix) == 0;
    if (report) id_text.resize(id_text.size() - report_suffix.size());
    const std::optional<std::uint64_t> id =
        id_text.size() <= 18 && id_text.find_first_not_of("0123456789") == std::string::npos ? text::parse_u64(id_text)
                                                                                             : std::nullopt;
    if (!id) return json_error(404, "no run '" + id_text + "'");
    Result<store::RunRecord> run = store->run_reads().run(static_cast<std::int64_t>(*id));
    if (!run.ok()) return json_error(404, "no run " + id_text + " in the history");
    if (report) {  // baton report's HTML page: inline CSS and SVG, no script, nothing loaded
        Result<store::StoredRun> stored = store->run_reads().load_run(run->id);
        if (!stored.ok()) return json_error(500, stored.error().message);
        out.content_type = "text/html; charset=utf-8";
        out.body = report::run_report_html(*stored);
        out.headers.emplace_back("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
        return out;
    }
    Result<std::vector<store::RecordedFinding>> findings = store->run_reads().findings(run->id);
    if (!findings.ok()) return json_error(500, findings.error().message);
    store::append_run_json(*run, out.body, &*findings);
    out.body.push_back('\n');
    return out;
}

}  // namespace baton::serve
