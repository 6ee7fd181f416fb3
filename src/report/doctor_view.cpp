#include "report/doctor_view.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/json_writer.hpp"

namespace baton::report {

int doctor_exit_status(const std::vector<doctor::CheckItem>& items) {
    for (const doctor::CheckItem& i : items)
        if (i.status == doctor::CheckStatus::fail) return 1;
    return 0;
}

void append_doctor_text(const std::vector<doctor::CheckItem>& items, std::string& out) {
    std::size_t counts[4] = {0, 0, 0, 0};
    for (const doctor::CheckItem& i : items) {
        const std::string mark = i.status == doctor::CheckStatus::pass   ? "ok  "
                                 : i.status == doctor::CheckStatus::warn ? "WARN"
                                 : i.status == doctor::CheckStatus::fail ? "FAIL"
                                                                         : "skip";
        out += fmt::format("{}  {:<24} {}\n", mark, i.id, i.detail);
        if (!i.fix.empty() && (i.status == doctor::CheckStatus::warn || i.status == doctor::CheckStatus::fail))
            out += fmt::format("      {:<24} fix: {}\n", "", i.fix);
        counts[static_cast<int>(i.status)] += 1;
    }
    out += fmt::format("\n{} passed, {} warnings, {} failed, {} skipped\n", counts[0], counts[1], counts[2], counts[3]);
}

void append_health_text(const std::vector<doctor::CheckItem>& items, std::size_t gpus, std::string& out) {
    if (doctor_exit_status(items) == 0) {
        std::string passed;
        for (const doctor::CheckItem& i : items)
            if (i.status == doctor::CheckStatus::pass) passed += (passed.empty() ? "" : ", ") + i.id;
        out +=
            fmt::format("healthy: {} GPU{}; passed {}\n", gpus, gpus == 1 ? "" : "s", passed.empty() ? "none" : passed);
    }
    for (doctor::CheckStatus status :
         {doctor::CheckStatus::fail, doctor::CheckStatus::warn, doctor::CheckStatus::skip, doctor::CheckStatus::pass})
        for (const doctor::CheckItem& i : items)
            if (i.status == status && (status != doctor::CheckStatus::pass || i.say)) {
                const char* mark = status == doctor::CheckStatus::fail   ? "FAIL"
                                   : status == doctor::CheckStatus::warn ? "WARN"
                                   : status == doctor::CheckStatus::skip ? "skip"
                                                                         : "ok";
                out += fmt::format("{} {}: {}\n", mark, i.id, i.detail);
            }
}

void append_doctor_json(const std::vector<doctor::CheckItem>& items, std::string& out) {
    JsonWriter w(out);
    w.begin_object();
    w.field("schema_version", 1);
    w.key("checks");
    w.begin_array();
    for (const doctor::CheckItem& i : items) {
        w.begin_object();
        w.field("id", i.id);
        w.field("status", check_status_name(i.status));
        w.field("title", i.title);
        w.field("detail", i.detail);
        if (!i.fix.empty()) w.field("fix", i.fix);
        w.end_object();
    }
    w.end_array();
    w.field("exit_status", doctor_exit_status(items));
    w.end_object();
    w.finish();
}

}  // namespace baton::report
