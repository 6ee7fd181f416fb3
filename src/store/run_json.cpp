#include "store/run_json.hpp"

#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "formats/finding_json.hpp"

namespace baton::store {

void append_run_json(const RunRecord& r, std::string& out, const std::vector<RecordedFinding>* findings,
                     const std::vector<RecordedHang>* hangs) {
    JsonWriter w(out);
    w.begin_object();
    w.field("id", r.id);
    w.field("name", r.name);
    w.field("kind", run_kind_name(r.kind));
    w.field("command", r.command);
    w.field("cwd", r.cwd);
    w.field("host", r.host);
    w.field("state", run_state_name(r.state));
    w.field("start", rfc3339_utc(r.start_ms));
    if (r.end_ms) w.field("end", rfc3339_utc(*r.end_ms));
    w.optional_field("exit_status", r.exit_status);
    w.field("samples", r.samples);
    w.field("findings", r.findings);
    if (findings) {
        w.optional_field("cpu_count", r.cpu_count);
        w.optional_field("memory_total_bytes", r.memory_total_bytes);
        w.key("gpus");
        w.begin_array();
        for (const RunGpu& g : r.gpus) {
            w.begin_object();
            w.field("index", g.index);
            w.field("uuid", g.uuid);
            w.field("name", g.name);
            w.field("memory_total_bytes", g.memory_total_bytes);
            w.end_object();
        }
        w.end_array();
        w.key("finding_list");
        w.begin_array();
        for (const RecordedFinding& f : *findings) {
            w.begin_object();
            w.field("time", rfc3339_utc(f.t_ms));
            w.field("rule", f.rule);
            w.field("severity", f.severity);
            w.field("subject", f.subject);
            w.field("summary", f.summary);
            w.field("recommendation", f.recommendation);
            w.key("evidence");  // cuda_oom's autopsy among them: what held the memory, by category
            formats::write_evidence_json(w, f.evidence);
            w.end_object();
        }
        w.end_array();
        if (hangs) {
            w.key("hangs");
            w.begin_array();
            for (const RecordedHang& h : *hangs) {
                w.begin_object();
                w.field("time", rfc3339_utc(h.t_ms));
                w.field("rule", h.rule);
                w.field("text", h.text);
                w.end_object();
            }
            w.end_array();
        }
        w.field("summary", r.summary);
    }
    w.end_object();
}

}  // namespace baton::store
