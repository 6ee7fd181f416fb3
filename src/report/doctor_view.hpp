// The views of `baton doctor`: a checklist as text, or one JSON object.
#pragma once

#include <string>
#include <vector>

#include "doctor/checks.hpp"

namespace baton::report {

void append_doctor_text(const std::vector<doctor::CheckItem>& items, std::string& out);
void append_doctor_json(const std::vector<doctor::CheckItem>& items, std::string& out);

// 0 when no check failed, 1 otherwise (warnings do not change it).
int doctor_exit_status(const std::vector<doctor::CheckItem>& items);

}  // namespace baton::report
