// A job's use of what it was given (diagnose/job_usage.hpp) as JSON: baton's own layout (the
// agent's GET /api/v1/jobs/JOB, `baton jobstats --json`; docs/fleet.md#jobstats), read back for
// merging several nodes' answers, and Princeton jobstats' summary layout, which its JS1 AdminComment
// holds as base64 of gzipped JSON (jobstats, reportseff and Job Defense Shield read it unchanged).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "diagnose/job_usage.hpp"

namespace baton::formats {

// {"job": {...}, "nodes": [...], "findings": [...], "notes": [...]}.
std::string job_use_json(const diagnose::JobUse& j, const std::vector<std::string>& notes);

// The inverse (notes are recomputed, not read); an invalid_argument error for text that is not
// JSON, or naming the first field that is missing or of the wrong type.
Result<diagnose::JobUse> read_job_use(std::string_view text);

// jobstats' summary: {"gpus": N, "nodes": {HOST: {"cpus", "total_memory", "used_memory",
// "total_time" (CPU seconds), "gpu_total_memory", "gpu_used_memory", "gpu_utilization" (by minor
// number)}}, "total_time": runtime seconds}, compact, keys sorted.
std::string jobstats_summary(const diagnose::JobUse& j);

// "JS1:" + base64(gzip(jobstats_summary)): what the epilog stores in the job's AdminComment.
std::string js1_admin_comment(const diagnose::JobUse& j);

// The summary JSON a JS1 AdminComment holds (the inverse of js1_admin_comment, for checks); an
// error for text that is not one.
Result<std::string> decode_js1(std::string_view admin_comment);

}  // namespace baton::formats
