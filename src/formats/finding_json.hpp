// The JSON view of one Finding (docs/findings.md, "JSON output"): the same object in
// `baton diagnose --json`, `baton run --summary-json` and the run history's evidence column.
#pragma once

#include <string>

#include "core/json_writer.hpp"
#include "diagnose/finding.hpp"

namespace baton::formats {

// Writes `f` as one JSON object at the writer's current position (a value: after a key or
// inside an array).
void write_finding_json(JsonWriter& w, const diagnose::Finding& f);

// Writes the evidence list alone, as a JSON array.
void write_evidence_json(JsonWriter& w, const std::vector<diagnose::Evidence>& evidence);

}  // namespace baton::formats
