// One datagram on the hook's socket (anyone who can write to it may send anything): an event with
// every figure in range, or an error.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "store/hook_event.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    baton::Result<baton::store::HookEvent> e = baton::store::parse_hook_event(text);
    if (!e.ok()) return 0;
    const baton::store::StepEvent& s = e->step;
    if (s.t_ms < 0 || s.step_ms < 0 || s.wait_ms < 0 || s.wait_ms > s.step_ms || s.step < 0 || s.rank < 0) std::abort();
    if (s.samples && *s.samples < 0) std::abort();
    return 0;
}
