// An out-of-memory capture (any file the hook's socket names, and what a hostile process could write
// in its place) and an out-of-memory message (any line of a command's stderr): parsed or refused in one
// line, never a throw; a parsed capture is explained without a crash: a one-line summary and a fix,
// the memory's uses non-zero and largest first, every figure of the finding finite, the sites bounded.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gpu_memory/allocator_capture.hpp"
#include "gpu_memory/oom_autopsy.hpp"
#include "gpu_memory/oom_message.hpp"

namespace {

void check(const baton::gpu_memory::OomAutopsy& a) {
    using namespace baton::gpu_memory;
    if (a.summary.empty() || a.fix.empty() || a.summary.find('\n') != std::string::npos) std::abort();
    for (std::size_t i = 0; i < a.uses.size(); ++i)
        if (a.uses[i].second == 0 || (i > 0 && a.uses[i].second > a.uses[i - 1].second)) std::abort();
    if (a.sites.size() > 8) std::abort();
    if (a.largest_batch && *a.largest_batch < 0) std::abort();
    const baton::diagnose::Finding f = oom_finding(a, "");
    if (f.rule != "cuda_oom") std::abort();
    for (const baton::diagnose::Evidence& e : f.evidence)
        if (e.maximum && !std::isfinite(*e.maximum)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace baton::gpu_memory;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    OomInputs in;
    in.message = parse_oom_message(text);
    if (in.message && in.message->others.size() > 256) std::abort();
    check(explain_oom(in));
    const baton::Result<OomCapture> c = parse_oom_capture(text);
    if (!c.ok()) {
        if (c.error().message.empty() || c.error().message.find('\n') != std::string::npos) std::abort();
        return 0;
    }
    for (const Segment& s : c->segments)
        for (const Block& b : s.blocks)
            if (b.stack >= 0 && static_cast<std::size_t>(b.stack) >= c->stacks.size()) std::abort();
    for (const Stack& s : c->stacks)
        if (s.size() > 64) std::abort();
    in.capture = &*c;
    in.message = parse_oom_message(c->message);
    StepMemory m;
    m.held_bytes = c->stats.allocated;
    m.held_first = c->stats.allocated / 2;
    m.peak_bytes = c->stats.peak_allocated;
    m.batch_size = c->batch_size.value_or(0);
    m.steps = 8;
    m.model = batch_memory_model({{0, m.batch_size, m.held_bytes, m.peak_bytes}});
    in.steps = m;
    check(explain_oom(in));
    return 0;
}
