// Failures a training command reports on its stderr, recognised by PyTorch's own messages: CUDA out
// of memory, a DataLoader worker killed (by the host's OOM killer) or dying of SIGBUS (shared
// memory exhausted). The text itself passes through unchanged; this only reads along.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnose/finding.hpp"

namespace baton::run {

class FailureScanner {
  public:
    // Feeds output as it arrives (any chunking; lines are reassembled, long ones capped).
    void feed(std::string_view chunk);
    // One finding per failure kind seen, with the first matching line as evidence.
    const std::vector<diagnose::Finding>& findings() const { return findings_; }
    // The first CUDA out-of-memory line with PyTorch's numbers ("Tried to allocate"), else the first
    // at all, whole (at most 4 KiB): for the autopsy.
    const std::string& oom_line() const { return oom_line_; }

  private:
    void line(std::string_view l);
    void add(const std::string& rule, diagnose::Severity s, std::string summary, std::string fix, std::string snippet,
             std::string_view evidence);

    std::string partial_;
    std::string oom_line_;
    std::vector<diagnose::Finding> findings_;
};

// The ids FailureScanner and `baton run` report besides the diagnosis rules (docs/findings.md), the hang
// verdict's (run/job_hangs.hpp) and --tune-live's changes (tune/live_control.hpp) among them.
const std::vector<std::string>& run_finding_ids();

}  // namespace baton::run
