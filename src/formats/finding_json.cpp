#include "formats/finding_json.hpp"

namespace baton::formats {

void write_evidence_json(JsonWriter& w, const std::vector<diagnose::Evidence>& evidence) {
    w.begin_array();
    for (const diagnose::Evidence& e : evidence) {
        w.begin_object();
        w.field("metric", e.metric);
        w.optional_field("average", e.average);
        w.optional_field("minimum", e.minimum);
        w.optional_field("maximum", e.maximum);
        w.field("threshold", e.threshold);
        w.optional_field("breach_share", e.breach_share);
        w.field("samples", static_cast<std::uint64_t>(e.samples));
        w.end_object();
    }
    w.end_array();
}

void write_finding_json(JsonWriter& w, const diagnose::Finding& f) {
    w.begin_object();
    w.field("rule", f.rule);
    w.field("severity", diagnose::severity_name(f.severity));
    w.field("subject", f.subject);
    if (!f.job.empty()) w.field("job", f.job);
    w.field("summary", f.summary);
    w.key("evidence");
    write_evidence_json(w, f.evidence);
    w.field("recommendation", f.recommendation);
    w.optional_field("snippet", f.snippet);
    w.field("doc", f.doc);
    w.end_object();
}

}  // namespace baton::formats
