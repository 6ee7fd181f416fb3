// The text of `baton diagnose`: evidence says what it has (no minimum or maximum printed as 0 where
// the JSON has none), and names from outside (a mount point with a newline) stay on their line.
#include "report/findings_view.hpp"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::report;

namespace {

diagnose::Finding finding() {
    diagnose::Finding f;
    f.rule = "disk_space_low";
    f.severity = diagnose::Severity::warning;
    f.subject = "fs:/mnt/a\nb";
    f.summary = "/mnt/a\nb has 1 GiB left";
    f.recommendation = "free space";
    f.snippet = "du -xh --max-depth=2 $'/mnt/a\\nb' | sort -h | tail";
    return f;
}

std::string text_of(const diagnose::Finding& f) {
    DiagnosisInfo info;
    info.source = "live";
    info.snapshots = 2;
    std::string out;
    append_findings_text(info, {f}, {}, out);
    return out;
}

}  // namespace

TEST(FindingsView, EvidenceSaysOnlyWhatItHas) {
    diagnose::Finding f = finding();
    diagnose::Evidence e;
    e.metric = "fs.avail_percent";
    e.average = 3.0;
    e.threshold = "< 5";
    e.samples = 2;
    f.evidence.push_back(e);
    e.metric = "cpu.utilization_percent";
    e.minimum = 1.0;
    e.maximum = 99.0;
    f.evidence.push_back(e);
    const std::string out = text_of(f);
    EXPECT_NE(out.find("evidence: fs.avail_percent avg 3.0 over 2 samples"), std::string::npos) << out;
    EXPECT_EQ(out.find("fs.avail_percent avg 3.0 min"), std::string::npos) << out;
    EXPECT_NE(out.find("cpu.utilization_percent avg 3.0 min 1.0 max 99.0"), std::string::npos) << out;
}

TEST(FindingsView, NamesFromOutsideStayOnTheirLine) {
    const std::string out = text_of(finding());
    EXPECT_NE(out.find("[fs:/mnt/a?b]  /mnt/a?b has 1 GiB left\n"), std::string::npos) << out;
    EXPECT_NE(out.find("            du -xh --max-depth=2 $'/mnt/a\\nb' | sort -h | tail\n"), std::string::npos) << out;
}
