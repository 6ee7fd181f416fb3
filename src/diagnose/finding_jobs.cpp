#include "diagnose/finding_jobs.hpp"

#include <algorithm>

#include "core/text_parse.hpp"
#include "sample/process_lookup.hpp"

namespace baton::diagnose {

std::string job_of_subject(const Snapshot& snap, std::string_view subject) {
    if (snap.jobs.empty()) return {};
    if (subject.substr(0, 4) == "pid:") {
        const auto pid = text::parse_digits<std::uint32_t>(subject.substr(4));
        const ProcessInfo* p = pid ? find_process(snap, *pid) : nullptr;
        const JobInfo* j = p ? find_job(snap, p->job) : nullptr;
        return j ? j->label : std::string();
    }
    if (subject.substr(0, 4) != "gpu:") return {};
    // "gpu:N", or "gpu:N/mig:G" for one of its MIG devices: the jobs of GPU N.
    std::string_view index = subject.substr(4);
    index = index.substr(0, index.find("/mig:"));
    const auto gpu = text::parse_digits<unsigned>(index);
    if (!gpu) return {};
    std::vector<std::string_view> labels;
    for (const JobInfo& j : snap.jobs) {
        const auto has = [&](const std::vector<unsigned>& v) { return std::binary_search(v.begin(), v.end(), *gpu); };
        if (has(j.gpus) || has(j.allocated_gpus)) labels.push_back(j.label);
    }
    std::sort(labels.begin(), labels.end());
    std::string out;
    for (std::string_view l : labels) {
        if (!out.empty()) out += ',';
        out += l;
    }
    return out;
}

void name_jobs(std::vector<Finding>& findings, const Snapshot& newest) {
    for (Finding& f : findings)
        if (f.job.empty()) f.job = job_of_subject(newest, f.subject);
}

}  // namespace baton::diagnose
