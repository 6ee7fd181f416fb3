// One line on the queue's socket (any local user who can connect may send anything): a request
// whose fields hold what the agent relies on, or an error; and what a parsed request says is what
// it says again once written back and parsed.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "queue/protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace baton::queue;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    baton::Result<Request> r = parse_request(text);
    if (!r.ok()) return 0;
    for (std::int64_t id : r->jobs)
        if (id <= 0) std::abort();
    if (r->op == Op::submit) {
        const Submission& s = r->submit;
        if (s.argv.empty() || s.argv.front().empty() || s.cwd.empty() || s.cwd.front() != '/') std::abort();
        for (const auto& [k, v] : s.env)
            if (k.empty() || k.find('=') != std::string::npos) std::abort();
        for (std::int64_t id : s.after)
            if (id <= 0) std::abort();
        // An array: as many values as indices, none negative, within the limit.
        if (s.array.indices.size() != s.array.values.size() || s.array.indices.size() > kMaxArrayElements) std::abort();
        for (std::int64_t i : s.array.indices)
            if (i < 0) std::abort();
    }
    if ((r->op == Op::group_set || r->op == Op::group_remove) && r->group.empty()) std::abort();
    if (r->op == Op::edit) {
        const JobEdit& e = r->edit;
        if (r->jobs.size() != 1 || e.empty() || (e.argv && (e.argv->empty() || e.argv->front().empty()))) std::abort();
        if (e.after)
            for (std::int64_t id : *e.after)
                if (id <= 0) std::abort();
    }
    if (r->op == Op::group_set && (r->parallel == 0 || r->parallel > 1000000)) std::abort();
    if (r->op == Op::cancel && (r->jobs.empty() || !(r->grace_seconds >= 0 && r->grace_seconds <= 86400))) std::abort();
    // One job for each of the others that names jobs (pause and resume among them).
    if ((r->op == Op::pause || r->op == Op::resume || r->op == Op::restart || r->op == Op::hold || r->op == Op::show) &&
        r->jobs.size() != 1)
        std::abort();
    if (r->op == Op::clean && !r->jobs.empty()) std::abort();
    if (r->op == Op::usage && r->since_ms < 0) std::abort();
    baton::Result<Request> again = parse_request(request_line(*r));
    if (!again.ok() || again->op != r->op || again->jobs != r->jobs || again->successful_only != r->successful_only)
        std::abort();
    if (r->op == Op::submit &&
        (again->submit.argv != r->submit.argv || again->submit.env != r->submit.env ||
         again->submit.cwd != r->submit.cwd || again->submit.array.indices != r->submit.array.indices ||
         again->submit.array.values != r->submit.array.values || again->submit.array.append != r->submit.array.append ||
         again->submit.request.group != r->submit.request.group ||
         again->submit.request.max_parallel != r->submit.request.max_parallel))
        std::abort();
    if (again->group != r->group || (r->op == Op::group_set && again->parallel != r->parallel)) std::abort();
    if (r->op == Op::usage && (again->since_ms != r->since_ms || again->user != r->user)) std::abort();
    if (r->op == Op::edit && (again->edit.argv != r->edit.argv || again->edit.after != r->edit.after ||
                              again->edit.priority != r->edit.priority || again->edit.cpus != r->edit.cpus ||
                              again->edit.memory_bytes != r->edit.memory_bytes || again->edit.group != r->edit.group))
        std::abort();
    return 0;
}
