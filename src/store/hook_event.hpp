// Events from the Python hook (python/baton/_events.py): one JSON object per datagram on the
// socket `baton run` names in BATON_EVENTS. The reader is strict (a wrong type is an error
// naming the key) and bounded (a datagram over kMaxHookEventBytes is refused unread): anything
// can write to that socket.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/result.hpp"
#include "diagnose/finding.hpp"
#include "store/history.hpp"

namespace baton::store {

inline constexpr std::size_t kMaxHookEventBytes = 16384;

// The CUDA caching allocator's figures a step carries (its data's "cuda" object, python/baton/torch.py):
// at the step's end, and the peak allocation since the step before ended.
struct AllocatorFigures {
    unsigned device = 0;
    std::uint64_t allocated = 0, reserved = 0, active = 0, peak_allocated = 0, inactive_split = 0;
    std::uint64_t num_ooms = 0, num_alloc_retries = 0;
    std::uint64_t total = 0;  // the device's memory (0: not sent)
};

struct HookEvent {
    std::string type;                          // "step", "finding" (others are skipped by the reader's caller)
    std::uint64_t dropped = 0;                 // events the sender could not send before this one (cumulative)
    StepEvent step;                            // for "step"; its t_ms and pid are every event's time and sender
    std::optional<diagnose::Finding> finding;  // for "finding": from baton.torch.check()
    std::optional<AllocatorFigures> cuda;      // for "step": its data's allocator figures, when sent
    // For "profile" (the window of `baton run --profile`, python/baton/_profile.py) and "oom" (the
    // capture at a CUDA out-of-memory error, python/baton/_memory.py): the file the hook wrote (an
    // absolute path; whoever reads it checks where it is) and the rank (in step.rank); for "profile",
    // the steps it recorded.
    std::string path;
    std::int64_t profile_steps = 0;
    // For "step": found with no code change (python/baton/_auto.py: an optimizer step), not sent by
    // the script's own baton.torch.watch. For "hook": the mode the hook installed ("auto").
    bool automatic = false;
    std::string mode;
    // For "loader", "process", "losses" and "live" (what `baton tune` and --tune-live read:
    // python/baton/_tune.py): the
    // datagram itself, a JSON object its reader checks key by key.
    std::string body;
};

// Parses one datagram. Keys: type (string), t (unix ms), pid, dropped; for "step": rank, step,
// step_ms, wait_ms (numbers >= 0; wait_ms is capped at step_ms), samples (optional), data
// (optional object, kept as its JSON text); for "finding": rule (lower-case id), severity (info,
// warning, critical), subject, summary, recommendation, snippet (optional), texts bounded in
// length; for "profile": path (an absolute path of at most 4096 bytes), steps, rank; for "oom": path,
// rank; for "hook" (the automatic step hook installed in a process): mode (a string); a step's
// "auto" (a boolean) says it was found with no code change; "loader", "process", "losses" and "live" are
// kept whole (HookEvent::body). Unknown keys are ignored.
Result<HookEvent> parse_hook_event(std::string_view datagram);

// A stored step's allocator figures (StepEvent::data, as sent); none when it has none or they are
// malformed (keys: device, total_bytes, allocated_bytes, reserved_bytes, active_bytes, peak_allocated_bytes,
// inactive_split_bytes, num_ooms, num_alloc_retries: integers >= 0; allocated and reserved required).
std::optional<AllocatorFigures> parse_allocator_figures(std::string_view data_json);

}  // namespace baton::store
