// The checks of `baton doctor`: each a pure function of the gathered facts, giving pass, warn,
// fail or skip with what was found and the fix. Ids are stable (docs/cli.md lists them).
#pragma once

#include <string>
#include <vector>

#include "doctor/facts.hpp"

namespace baton::doctor {

enum class CheckStatus { pass, warn, fail, skip };

// "pass", "warn", "fail", "skip".
const char* check_status_name(CheckStatus s);

struct CheckItem {
    std::string id;  // e.g. "nvidia_driver"
    CheckStatus status = CheckStatus::pass;
    std::string title;   // what is checked
    std::string detail;  // what was found
    std::string fix;     // empty when nothing to do
    bool say = false;    // a check that passes but lists something (doctor --health prints its line)
};

std::vector<CheckItem> run_checks(const DoctorFacts& f);

// Every check id, in output order.
const std::vector<std::string>& check_ids();

// The interfaces among `names` that NCCL_SOCKET_IFNAME=`value` lets NCCL use, with NCCL's syntax:
// comma-separated prefixes; a leading '^' excludes them instead; a leading '=' matches names exactly.
std::vector<std::string> nccl_socket_interfaces(const std::string& value, const std::vector<std::string>& names);

}  // namespace baton::doctor
