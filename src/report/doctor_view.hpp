// The views of `baton doctor`: a checklist as text, or one JSON object.
#pragma once

#include <string>
#include <vector>

#include "doctor/checks.hpp"

namespace baton::report {

void append_doctor_text(const std::vector<doctor::CheckItem>& items, std::string& out);
void append_doctor_json(const std::vector<doctor::CheckItem>& items, std::string& out);

// `baton doctor --health`'s text: a line per failing, warning or skipped check ("FAIL xid: GPU1 ..."),
// led by "healthy: ..." when none failed, so the first line says it for a probe that shows one.
void append_health_text(const std::vector<doctor::CheckItem>& items, std::size_t gpus, std::string& out);

// 0 when no check failed, 1 otherwise (warnings do not change it).
int doctor_exit_status(const std::vector<doctor::CheckItem>& items);

}  // namespace baton::report
