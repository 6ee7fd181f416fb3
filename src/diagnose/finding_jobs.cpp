#include "diagnose/finding_jobs.hpp"

#include <algorithm>
#include <optional>

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
    // "gpu:N": the jobs using or allocated GPU N. "gpu:N/mig:G", one of its MIG devices: the jobs of
    // the processes in GPU instance G alone (another MIG device's job is not this one's).
    std::string_view index = subject.substr(4);
    const std::size_t mig_at = index.find("/mig:");
    std::optional<unsigned> mig;
    if (mig_at != std::string_view::npos) {
        mig = text::parse_digits<unsigned>(index.substr(mig_at + 5));
        if (!mig) return {};
    }
    index = index.substr(0, mig_at);
    const auto gpu = text::parse_digits<unsigned>(index);
    if (!gpu) return {};
    std::vector<std::string_view> labels;
    if (mig) {
        for (const GpuInfo& g : snap.gpus) {
            if (g.index != *gpu) continue;
            for (const GpuProcess& gp : g.processes) {
                if (gp.gpu_instance_id != mig) continue;
                const ProcessInfo* p = find_process(snap, gp.our_pid());
                if (const JobInfo* j = p ? find_job(snap, p->job) : nullptr) labels.push_back(j->label);
            }
        }
        std::sort(labels.begin(), labels.end());
        labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
    }
    for (const JobInfo& j : snap.jobs) {
        if (mig) break;
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
