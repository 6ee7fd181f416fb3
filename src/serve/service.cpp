#include "serve/service.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/http.h>

#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "core/printable.hpp"
#include "core/text_parse.hpp"
#include "diagnose/rules.hpp"
#include "report/findings_view.hpp"
#include "sample/linux/job_cgroup_usage.hpp"
#include "sample/linux/kept_file.hpp"
#include "serve/assets.hpp"
#include "serve/auth.hpp"
#include "serve/history_api.hpp"
#include "formats/job_usage_json.hpp"
#include "formats/snapshot_json.hpp"

namespace baton::serve {

namespace {

// The families this file writes, each declared once: a sample can only name one of these.
constexpr formats::MetricFamily kBatonFindingActive{"baton_finding_active", "gauge",
                                                    "1 while a finding holds (the series goes when it ends)."};
constexpr formats::MetricFamily kBatonFindingInfo{
    "baton_finding_info", "gauge",
    "The summary and the fix of an active finding, as labels; always 1 (deploy/prometheus/ uses it)."};
constexpr formats::MetricFamily kBatonFindingsTotal{"baton_findings_total", "counter",
                                                    "Findings that began since the agent started."};
constexpr formats::MetricFamily kBatonSelfCpuSecondsTotal{"baton_self_cpu_seconds_total", "counter",
                                                          "CPU time baton serve has used."};
constexpr formats::MetricFamily kBatonSelfResidentBytes{"baton_self_resident_bytes", "gauge",
                                                        "Resident memory of baton serve."};
constexpr formats::MetricFamily kBatonSampleDurationSeconds{"baton_sample_duration_seconds", "gauge",
                                                            "How long the last sample took."};
constexpr formats::MetricFamily kBatonSamplesTotal{"baton_samples_total", "counter",
                                                   "Samples taken since the agent started."};
constexpr formats::MetricFamily kBatonLastSampleTimestampSeconds{"baton_last_sample_timestamp_seconds", "gauge",
                                                                 "Unix time of the last sample (stale when it stops)."};
constexpr formats::MetricFamily kBatonScrapeDurationSeconds{"baton_scrape_duration_seconds", "gauge",
                                                            "How long the previous /metrics request took to answer."};
constexpr formats::MetricFamily kBatonBuildInfo{"baton_build_info", "gauge", "baton's version and commit; always 1."};

constexpr const char* kJson = "application/json";

// /proc/self/statm's resident pages, in bytes; 0 when unreadable.
double self_resident_bytes() {
    os::ReadBuffer buf;
    if (!os::read_file("/proc/self/statm", buf)) return 0;
    std::string_view s = buf;
    const std::size_t space = s.find(' ');
    if (space == std::string_view::npos) return 0;
    s.remove_prefix(space + 1);
    const double pages = static_cast<double>(text::take_u64(s).value_or(0));
    return pages * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double self_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

bool host_allowed(std::string_view host, const std::vector<std::string>& allowed) {
    if (allowed.empty()) return true;
    if (host.empty()) return false;  // a check a missing header skipped would be no check
    std::string_view name = host, port;
    if (name.front() == '[') {
        const std::size_t close = name.find(']');
        if (close == std::string_view::npos) return false;
        port = name.substr(close + 1);
        name = name.substr(0, close + 1);
    } else if (const std::size_t colon = name.find(':'); colon != std::string_view::npos) {
        port = name.substr(colon);
        name = name.substr(0, colon);
    }
    // What follows the name is nothing, or ":" and the port's digits.
    if (!port.empty() && (port.size() < 2 || port.front() != ':' ||
                          port.substr(1).find_first_not_of("0123456789") != std::string_view::npos))
        return false;
    if (!name.empty() && name.back() == '.') name.remove_suffix(1);
    for (const std::string& a : allowed) {
        if (a.size() != name.size()) continue;
        bool same = true;
        for (std::size_t i = 0; i < a.size() && same; ++i)
            same = std::tolower(static_cast<unsigned char>(a[i])) == std::tolower(static_cast<unsigned char>(name[i]));
        if (same) return true;
    }
    return false;
}

HttpResponse json_error(int status, const std::string& message) {
    HttpResponse r;
    r.status = status;
    r.content_type = kJson;
    JsonWriter w(r.body);
    w.begin_object();
    w.field("error", message);
    w.end_object();
    w.finish();
    r.body.push_back('\n');
    return r;
}

HttpResponse Service::handle(const HttpRequest& r) {
    HttpResponse out = route(r);
    // Every answer: nothing it holds may load anything from elsewhere (the live page included).
    bool has_policy = false;
    for (const auto& [k, v] : out.headers) has_policy = has_policy || k == "Content-Security-Policy";
    if (!has_policy) out.headers.emplace_back("Content-Security-Policy", std::string(kContentSecurityPolicy));
    return out;
}

HttpResponse Service::route(const HttpRequest& r) {
    // Before anything else, the page included: a loopback agent answers only to its own names.
    if (!host_allowed(r.host, options_.allowed_hosts))
        return json_error(421, "Host '" + printable(std::string_view(r.host).substr(0, 100)) +
                                   "' is not this agent's name (a loopback agent answers to localhost, its address "
                                   "and [serve] allowed_hosts)");
    // The page and its files hold no data: they load without the token, and the page then asks
    // for it (docs/api.md). /metrics may be left open for scrapers.
    const std::optional<Asset> asset = r.method == "GET" || r.method == "HEAD" ? find_asset(r.path) : std::nullopt;
    const bool open = asset || (r.path == "/metrics" && options_.metrics_without_token);
    // The token in the header, or as RFC 6750's access_token query parameter (a report opened in a
    // new tab cannot carry a header).
    auto query_token = r.query.find("access_token");
    const std::string authorization =
        !r.authorization.empty() || query_token == r.query.end() ? r.authorization : "Bearer " + query_token->second;
    if (!options_.token.empty() && !open && !bearer_matches(authorization, options_.token)) {
        HttpResponse e = json_error(
            401, authorization.empty() ? "this endpoint needs 'Authorization: Bearer TOKEN'" : "wrong token");
        e.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"baton\"");
        return e;
    }
    if (options_.api_closed && !open)
        return json_error(403, "this agent has no token ([serve] token_file): off loopback it serves /metrics alone");
    if (r.method != "GET" && r.method != "HEAD") {
        HttpResponse e = json_error(405, "only GET and HEAD are served");
        e.headers.emplace_back("Allow", "GET, HEAD");
        return e;
    }
    if (r.query_malformed) return json_error(400, "the query string cannot be decoded");
    if (asset) {
        HttpResponse p;
        p.content_type = std::string(asset->content_type);
        p.body = std::string(asset->body);
        return p;
    }
    if (r.path == "/api/v1/history")
        return history_response(r, {&agent_.memory(), store_, options_.interval_seconds, unix_millis()});
    if (r.path == "/api/v1/runs" || r.path.rfind("/api/v1/runs/", 0) == 0) return runs_response(r, store_);
    const SampledTick s = agent_.state();
    if (r.path == "/metrics") return metrics(s);
    if (r.path == "/api/v1/health") return health(s);
    if (r.path == "/api/v1/snapshot") return snapshot(r, s);
    if (r.path == "/api/v1/findings") return findings(s);
    if (r.path == "/api/v1/jobs" || r.path.rfind("/api/v1/jobs/", 0) == 0) return jobs(r);
    return json_error(404, "no such endpoint (see /)");
}

HttpResponse Service::metrics(const SampledTick& s) {
    const double started = monotonic_seconds();
    // The snapshot's families change once a sample: built once, whatever the number of scrapers.
    if (cache_.metrics_of != s.snapshot || cache_.metrics_options_version != options_version_) {
        cache_.metrics.clear();
        if (s.snapshot) formats::append_snapshot_prometheus(*s.snapshot, options_.prometheus, cache_.metrics);
        if (s.snapshot && options_.prometheus.jobstats_compat) {
            // The jobs' cgroup totals are read here, once per sample that is scraped, not by the
            // sampler on every tick: only jobstats wants them.
            formats::Exposition jobstats;
            formats::append_jobstats_compat(*s.snapshot, os::read_slurm_job_cgroups(*s.snapshot, options_.cgroup_root),
                                            jobstats);
            jobstats.write(cache_.metrics);
        }
        cache_.metrics_of = s.snapshot;
        cache_.metrics_options_version = options_version_;
    }
    formats::Exposition e;

    e.family(kBatonFindingActive);
    // job_id: the job behind the subject, where one is known ("slurm:1234"); not "job", which
    // Prometheus keeps for the scrape job.
    const auto identity = [](const diagnose::Finding& f) {
        formats::Exposition::Labels l{
            {"rule", f.rule}, {"severity", severity_name(f.severity)}, {"subject", f.subject}};
        if (!f.job.empty()) l.push_back({"job_id", f.job});
        return l;
    };
    for (const diagnose::Finding& f : *s.findings) e.sample(kBatonFindingActive, identity(f), 1.0);
    // The words of each active finding, for alert annotations: a series apart from
    // baton_finding_active, so that the alert's identity (rule, severity, subject) stays the same
    // while the numbers in its summary move; the alert rules look the words up with a query.
    e.family(kBatonFindingInfo);
    for (const diagnose::Finding& f : *s.findings) {
        formats::Exposition::Labels l = identity(f);
        l.push_back({"summary", printable(f.summary)});
        l.push_back({"fix", printable(f.recommendation)});
        e.sample(kBatonFindingInfo, l, 1.0);
    }
    // Every rule and severity from the start, at 0: increase() then sees the first finding too.
    e.family(kBatonFindingsTotal);
    // (and the rules of the queued jobs' verdicts, rank_hang among them, once one began)
    std::vector<std::string> rules = diagnose::rule_ids();
    for (const auto& [key, n] : s.findings_started)
        if (std::find(rules.begin(), rules.end(), key.first) == rules.end()) rules.push_back(key.first);
    for (const std::string& rule : rules)
        for (diagnose::Severity sev :
             {diagnose::Severity::info, diagnose::Severity::warning, diagnose::Severity::critical}) {
            auto it = s.findings_started.find({rule, sev});
            e.sample(kBatonFindingsTotal, {{"rule", rule}, {"severity", diagnose::severity_name(sev)}},
                     it == s.findings_started.end() ? 0.0 : static_cast<double>(it->second));
        }

    if (more_metrics_) more_metrics_(e);
    e.family(kBatonSelfCpuSecondsTotal);
    e.sample(kBatonSelfCpuSecondsTotal, {}, self_cpu_seconds());
    e.family(kBatonSelfResidentBytes);
    e.sample(kBatonSelfResidentBytes, {}, self_resident_bytes());
    e.family(kBatonSampleDurationSeconds);
    if (s.samples) e.sample(kBatonSampleDurationSeconds, {}, s.last_sample_seconds);
    e.family(kBatonSamplesTotal);
    e.sample(kBatonSamplesTotal, {}, static_cast<double>(s.samples));
    e.family(kBatonLastSampleTimestampSeconds);
    if (s.snapshot)
        e.sample(kBatonLastSampleTimestampSeconds, {}, static_cast<double>(s.snapshot->time_unix_ms) / 1000.0);
    e.family(kBatonScrapeDurationSeconds);
    if (last_scrape_seconds_ >= 0) e.sample(kBatonScrapeDurationSeconds, {}, last_scrape_seconds_);
    e.family(kBatonBuildInfo);
    e.sample(kBatonBuildInfo, {{"version", options_.version}, {"commit", options_.commit}}, 1.0);

    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body.reserve(cache_.metrics.size() + 8192);
    r.body = cache_.metrics;
    e.write(r.body);
    last_scrape_seconds_ = monotonic_seconds() - started;
    return r;
}

HttpResponse Service::health(const SampledTick& s) const {
    // Stale: no sample for three intervals and 5 s (a hung NVML call has its own deadline).
    const double age = s.samples ? monotonic_seconds() - s.last_sample_monotonic : -1;
    const bool ok = s.samples && age <= 3 * options_.interval_seconds + 5;
    HttpResponse r;
    r.status = ok ? 200 : 503;
    r.content_type = kJson;
    JsonWriter w(r.body);
    w.begin_object();
    w.field("status", ok ? "ok" : (s.samples ? "stale" : "starting"));
    w.field("version", options_.version);
    w.field("samples", s.samples);
    if (s.samples) w.field("last_sample_age_seconds", age);
    w.field("gpu_status", s.snapshot ? s.snapshot->gpu_status : std::string());
    w.field("active_findings", static_cast<std::uint64_t>(s.findings->size()));
    w.end_object();
    w.finish();
    r.body.push_back('\n');
    return r;
}

// ?processes=gpu leaves out every process that is not on a GPU, ?cores=none the CPU's per-core
// figures: what a screen of several hosts shows (the holders, the totals) at a fraction of the
// size, read by the asker every second. The texts are built once per sample.
HttpResponse Service::snapshot(const HttpRequest& r, const SampledTick& s) {
    const auto param = [&](const char* name) {
        const auto it = r.query.find(name);
        return it == r.query.end() ? std::string() : it->second;
    };
    const std::string processes = param("processes"), cores = param("cores");
    if (!processes.empty() && processes != "gpu" && processes != "all")
        return json_error(400, "processes= takes gpu (only the processes on a GPU) or all");
    if (!cores.empty() && cores != "none" && cores != "all")
        return json_error(400, "cores= takes none (no per-core figures) or all");
    // A bad ask is said as such even before the first sample: the asker's fault comes first.
    if (!s.snapshot) return json_error(503, "no snapshot yet: the agent has just started");
    const int variant = (processes == "gpu" ? 1 : 0) | (cores == "none" ? 2 : 0);
    Cache::Json& cached = cache_.json[variant];
    if (cached.of != s.snapshot) {
        cached.text.clear();
        if (variant == 0) {
            cached.encoder.append(*s.snapshot, cached.text);
        } else {
            Snapshot light = *s.snapshot;
            if (variant & 1)
                std::erase_if(light.processes,
                              [](const ProcessInfo& p) { return !p.gpu_memory_bytes && p.gpu_indices.empty(); });
            if (variant & 2) light.cpu.cores.clear();
            cached.encoder.append(light, cached.text);
        }
        cached.text.push_back('\n');
        cached.of = s.snapshot;
    }
    HttpResponse out;
    out.content_type = kJson;
    out.body = cached.text;
    return out;
}

// GET /api/v1/jobs: every job this node saw (running, or ended within the hour), as
// GET /api/v1/jobs/JOB answers for one (JOB: its label "slurm:1234" or its id "1234").
HttpResponse Service::jobs(const HttpRequest& r) const {
    HttpResponse out;
    out.content_type = kJson;
    const std::string prefix = "/api/v1/jobs/";
    if (r.path.size() > prefix.size()) {
        // The path as sent: "%40" and the like decoded (a unit's "user@1000.service").
        char* decoded = evhttp_uridecode(r.path.c_str() + prefix.size(), 0, nullptr);
        const std::string job = decoded ? decoded : "";
        std::free(decoded);
        std::optional<diagnose::JobUse> use = agent_.job_use(job);
        if (!use)
            return json_error(404, "no job '" + printable(std::string_view(job).substr(0, 100)) +
                                       "' on this node (running, or ended within the hour)");
        out.body = formats::job_use_json(*use, diagnose::job_use_notes(*use));
    } else {
        out.body = "[";
        bool first = true;
        for (const diagnose::JobUse& use : agent_.job_uses()) {
            if (!first) out.body += ",";
            first = false;
            out.body += formats::job_use_json(use, diagnose::job_use_notes(use));
        }
        out.body += "]";
    }
    out.body.push_back('\n');
    return out;
}

HttpResponse Service::findings(const SampledTick& s) const {
    if (!s.snapshot) return json_error(503, "no findings yet: the agent has just started");
    HttpResponse r;
    r.content_type = kJson;
    report::append_findings_json(s.window, *s.findings, *s.indicators, r.body);
    r.body.push_back('\n');
    return r;
}

}  // namespace baton::serve
