// An agent's answer to `baton jobstats` (any host on the network may answer anything) and a JS1
// AdminComment (anyone with sacctmgr rights may write one): read, or refused with a reason. What is
// read writes back to JSON that reads the same, its notes and jobstats summary are made without a
// fault, and a JS1 decodes only to JSON.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "diagnose/job_usage.hpp"
#include "formats/job_usage_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (baton::Result<std::string> js1 = baton::formats::decode_js1(text); js1.ok())
        if (nlohmann::json::parse(js1.value(), nullptr, false).is_discarded()) std::abort();
    baton::Result<baton::diagnose::JobUse> use = baton::formats::read_job_use(text);
    if (!use.ok()) {
        if (use.error().message.empty()) std::abort();
        return 0;
    }
    const std::vector<std::string> notes = baton::diagnose::job_use_notes(use.value());
    const std::string again = baton::formats::job_use_json(use.value(), notes);
    baton::Result<baton::diagnose::JobUse> back = baton::formats::read_job_use(again);
    if (!back.ok() || back.value().label != use.value().label || back.value().nodes.size() != use.value().nodes.size())
        std::abort();
    if (nlohmann::json::parse(baton::formats::jobstats_summary(use.value()), nullptr, false).is_discarded())
        std::abort();
    return 0;
}
