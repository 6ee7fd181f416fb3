#include "run/failure_scan.hpp"

#include <algorithm>

namespace baton::run {

const std::vector<std::string>& run_finding_ids() {
    static const std::vector<std::string> ids = {"cuda_oom",  "host_oom_kill", "dataloader_bus_error",
                                                 "rank_hang", "rank_desync",   "live_tune"};
    return ids;
}

void FailureScanner::feed(std::string_view chunk) {
    while (!chunk.empty()) {
        const std::size_t nl = chunk.find_first_of("\n\r");
        if (nl == std::string_view::npos) {
            // Keep at most 64 KiB of an unfinished line: a progress bar without newlines must
            // not grow this forever.
            partial_.append(chunk.substr(0, 65536 - std::min<std::size_t>(partial_.size(), 65536)));
            return;
        }
        partial_.append(chunk.substr(0, nl));
        line(partial_);
        partial_.clear();
        chunk.remove_prefix(nl + 1);
    }
}

void FailureScanner::add(const std::string& rule, diagnose::Severity s, std::string summary, std::string fix,
                         std::string snippet, std::string_view evidence) {
    if (std::any_of(findings_.begin(), findings_.end(), [&](const diagnose::Finding& f) { return f.rule == rule; }))
        return;
    diagnose::Finding f;
    f.rule = rule;
    f.severity = s;
    f.subject = "job";
    f.summary = std::move(summary);
    f.recommendation = std::move(fix);
    if (!snippet.empty()) f.snippet = std::move(snippet);
    f.doc = "docs/findings.md#" + rule;
    diagnose::Evidence e;
    e.metric = "stderr";
    e.threshold = std::string(evidence.substr(0, 300));
    e.samples = 1;
    f.evidence.push_back(e);
    findings_.push_back(std::move(f));
}

void FailureScanner::line(std::string_view l) {
    // The exception's line ("torch.OutOfMemoryError: CUDA out of memory. ..."), not a traceback's source
    // line that names the type ("raise torch.cuda.OutOfMemoryError(").
    if (l.find("CUDA out of memory") != std::string_view::npos ||
        l.find("OutOfMemoryError:") != std::string_view::npos ||
        l.find("CUDA error: out of memory") != std::string_view::npos) {
        // The first line with the allocator's numbers, else the first that says it.
        const bool numbers = l.find("Tried to allocate") != std::string_view::npos;
        if (oom_line_.empty() || (numbers && oom_line_.find("Tried to allocate") == std::string::npos))
            oom_line_ = std::string(l.substr(0, 4096));
        // The job's watch replaces this with the autopsy (gpu_memory/oom_autopsy.hpp) where it has one.
        add("cuda_oom", diagnose::Severity::critical, "the job ran out of GPU memory (CUDA out of memory)",
            "Mixed precision (torch.autocast with a GradScaler) cuts activation memory by about 40 %; a smaller batch "
            "with gradient accumulation keeps the effective batch; activation checkpointing trades compute for "
            "memory; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True helps when the message shows much memory "
            "reserved but unallocated (fragmentation).",
            "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", l);
        return;
    }
    const bool worker = l.find("DataLoader worker") != std::string_view::npos;
    if ((worker && l.find("Bus error") != std::string_view::npos) ||
        l.find("out of shared memory") != std::string_view::npos) {
        add("dataloader_bus_error", diagnose::Severity::critical,
            "a DataLoader worker died of SIGBUS: shared memory (/dev/shm) ran out",
            "Workers hand batches over through /dev/shm. In Docker run with --ipc=host or --shm-size=16g; otherwise "
            "remount /dev/shm larger, or use fewer workers or a smaller prefetch_factor.",
            "docker run --ipc=host ...", l);
        return;
    }
    if (worker && l.find("killed by signal: Killed") != std::string_view::npos) {
        add("host_oom_kill", diagnose::Severity::critical,
            "a DataLoader worker was killed with SIGKILL, the host's OOM killer's signal",
            "Host memory ran out. Fewer DataLoader workers (each holds its own copy of an in-memory dataset), "
            "smaller data types, or load the dataset once into shared memory; check dmesg for \"Out of memory: "
            "Killed process\".",
            "", l);
    }
}

}  // namespace baton::run
