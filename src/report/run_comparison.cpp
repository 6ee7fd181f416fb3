#include "report/run_comparison.hpp"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "diagnose/host_load.hpp"
#include "report/svg_chart.hpp"

namespace baton::report {

namespace {

// The subject as a key that means the same GPU in both runs.
std::string stable_subject(const store::RunRecord& r, const std::string& subject) {
    unsigned index = 0;
    char rest = 0;
    if (std::sscanf(subject.c_str(), "gpu:%u%c", &index, &rest) == 1)
        for (const store::RunGpu& g : r.gpus)
            if (g.index == index && !g.uuid.empty()) return "uuid:" + g.uuid;
    return subject;
}

const store::RecordedFinding* find(const store::StoredRun& run, const std::string& rule, const std::string& key) {
    for (const store::RecordedFinding& f : run.findings)
        if (f.rule == rule && stable_subject(run.run, f.subject) == key) return &f;
    return nullptr;
}

std::optional<double> job_share(const store::RecordedFinding* f) {
    if (!f) return std::nullopt;
    for (const diagnose::Evidence& e : f->evidence)
        if (e.metric == diagnose::kJobShareMetric) return e.average;
    return std::nullopt;
}

}  // namespace

bool FindingChange::others() const {
    if (!job_share_a && !job_share_b) return false;
    return job_share_a.value_or(0) < diagnose::kMainCausePercent &&
           job_share_b.value_or(0) < diagnose::kMainCausePercent;
}

std::pair<std::string, std::string> metric_label(const std::string& metric) {
    std::string name = metric.substr(metric.rfind('.') == std::string::npos ? 0 : metric.rfind('.') + 1);
    std::string unit;
    for (const auto& [suffix, u] : {std::pair<const char*, const char*>{"_percent", "%"},
                                    {"_bytes_per_second", "B/s"},
                                    {"_bytes", "B"},
                                    {"_seconds", "s"},
                                    {"_ms", "ms"},
                                    {"_celsius", "C"},
                                    {"_watts", "W"}}) {
        const std::string s = suffix;
        if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
            name.resize(name.size() - s.size());
            unit = u;
            break;
        }
    }
    std::replace(name.begin(), name.end(), '_', ' ');
    return {name, unit};
}

std::vector<FindingChange> compare_findings(const store::StoredRun& a, const store::StoredRun& b) {
    std::vector<FindingChange> both, fresh, gone;
    std::vector<std::string> seen;  // rule + key, each once
    for (const store::RecordedFinding& fb : b.findings) {
        const std::string key = stable_subject(b.run, fb.subject);
        if (std::find(seen.begin(), seen.end(), fb.rule + " " + key) != seen.end()) continue;
        seen.push_back(fb.rule + " " + key);
        FindingChange c;
        c.rule = fb.rule;
        c.subject = fb.subject;
        c.severity_b = fb.severity;
        const store::RecordedFinding* fa = find(a, fb.rule, key);
        c.job_share_a = job_share(fa);
        c.job_share_b = job_share(&fb);
        if (!fa) {
            c.status = FindingChange::Status::fresh;
            fresh.push_back(std::move(c));
            continue;
        }
        c.severity_a = fa->severity;
        for (const diagnose::Evidence& eb : fb.evidence) {
            auto ea = std::find_if(fa->evidence.begin(), fa->evidence.end(),
                                   [&](const diagnose::Evidence& e) { return e.metric == eb.metric; });
            if (ea == fa->evidence.end() || !ea->average || !eb.average) continue;
            auto [label, unit] = metric_label(eb.metric);
            c.evidence.push_back({eb.metric, label, unit, *ea->average, *eb.average});
        }
        both.push_back(std::move(c));
    }
    std::vector<std::string> seen_a;
    for (const store::RecordedFinding& fa : a.findings) {
        const std::string key = stable_subject(a.run, fa.subject);
        if (std::find(seen_a.begin(), seen_a.end(), fa.rule + " " + key) != seen_a.end()) continue;
        seen_a.push_back(fa.rule + " " + key);
        if (find(b, fa.rule, key)) continue;
        FindingChange c;
        c.rule = fa.rule;
        c.subject = fa.subject;
        c.severity_a = fa.severity;
        c.job_share_a = job_share(&fa);
        c.status = FindingChange::Status::gone;
        gone.push_back(std::move(c));
    }
    both.insert(both.end(), fresh.begin(), fresh.end());
    both.insert(both.end(), gone.begin(), gone.end());
    return both;
}

std::string finding_change_text(const FindingChange& c) {
    std::string out = fmt::format("{} [{}]: ", c.rule, c.subject);
    if (c.others()) {
        auto share = [](std::optional<double> s) { return s ? fmt::format("{:.0f} %", *s) : std::string("-"); };
        if (c.status == FindingChange::Status::fresh)
            return out + "in the second run only, its job made " + share(c.job_share_b) + " of the load";
        if (c.status == FindingChange::Status::gone)
            return out + "in the first run only, its job made " + share(c.job_share_a) + " of the load";
        return out + "in both, their jobs made " + share(c.job_share_a) + " and " + share(c.job_share_b) +
               " of the load";
    }
    if (c.status == FindingChange::Status::gone) return out + "gone";
    if (c.status == FindingChange::Status::fresh) return out + "new";
    for (const FindingChange::Metric& m : c.evidence) {
        const std::string sep = m.unit.empty() ? "" : " ";
        out +=
            fmt::format("{} {}{}{} -> {}{}{}, ", m.label, number_text(m.a), sep, m.unit, number_text(m.b), sep, m.unit);
    }
    if (c.severity_a != c.severity_b) out += fmt::format("{} -> {}, ", c.severity_a, c.severity_b);
    return out + "still present";
}

}  // namespace baton::report
