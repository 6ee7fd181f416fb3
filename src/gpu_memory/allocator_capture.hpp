// What the Python hook wrote at a CUDA out-of-memory error (python/baton/_memory.py; the format is
// docs/memory.md's "The capture"): the failed request, the step and its phase, the allocator's
// statistics, the tensors the hook found (parameters, their gradients, the optimizers' state), and
// the caching allocator's own snapshot in the layout of torch.cuda.memory._snapshot() (segments and
// their blocks; with --memory-history, the last allocation events and their Python stacks), as JSON:
// baton never unpickles. The reader is strict and bounded: a capture is a file anything could have
// written.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.hpp"
#include "core/result.hpp"

namespace baton::gpu_memory {

inline constexpr std::size_t kMaxCaptureBytes = 64u << 20;

struct Frame {
    std::string filename;
    int line = 0;
    std::string name;
};
// A Python stack, innermost frame first (as PyTorch records them).
using Stack = std::vector<Frame>;

enum class BlockState { active_allocated, active_awaiting_free, inactive };

struct Block {
    std::uint64_t address = 0;  // given, or the segment's address plus the blocks before it
    std::uint64_t size = 0;
    std::uint64_t requested_size = 0;
    BlockState state = BlockState::inactive;
    std::int32_t stack = -1;  // into OomCapture::stacks; -1: none recorded
};

struct Segment {
    std::uint64_t address = 0, total_size = 0, allocated_size = 0, active_size = 0;
    std::uint64_t stream = 0;
    bool large = true;  // segment_type "large" (blocks of 1 MiB and more) or "small"
    std::vector<Block> blocks;
};

enum class TraceAction { alloc, free_requested, free_completed, segment_alloc, segment_free, oom, snapshot, other };

struct TraceEntry {
    TraceAction action = TraceAction::other;
    std::uint64_t addr = 0, size = 0, stream = 0;
    std::optional<std::uint64_t> device_free;  // for "oom"
    std::int32_t stack = -1;
};

// The phase of the step the failure came in, from the Python stack at the failure.
enum class StepPhase { forward, backward, optimizer, data, setup, other };

// The allocator's statistics (torch.cuda.memory_stats()'s "all" figures).
struct AllocatorStats {
    std::uint64_t allocated = 0, reserved = 0, active = 0, inactive_split = 0, peak_allocated = 0;
    std::uint64_t num_ooms = 0, num_alloc_retries = 0;
};

// The tensors the hook found at the failure, each by its storage's address and size on the failing device.
struct KnownTensor {
    std::uint64_t address = 0, bytes = 0;
};

struct OomCapture {
    std::uint32_t pid = 0;
    int rank = 0;
    unsigned device = 0;
    std::int64_t t_ms = 0;
    std::string torch_version;               // "2.4.1+cu121"
    std::optional<std::int64_t> step;        // steps the hook had counted before the failure
    std::optional<std::int64_t> batch_size;  // samples of the failing step's batch
    StepPhase phase = StepPhase::other;
    std::optional<std::uint64_t> requested_bytes;
    std::optional<std::uint64_t> device_total_bytes, device_free_bytes;
    bool autocast = false;  // torch.autocast was on where it failed (mixed precision in use)
    std::string message;    // the exception's text, when the hook saw it
    Stack failure_stack;    // where the failing request came from
    AllocatorStats stats;
    std::vector<KnownTensor> parameters, gradients, optimizer_state;
    bool history = false;            // allocation stacks were recorded (--memory-history)
    std::vector<Segment> segments;   // of the failing device
    std::vector<TraceEntry> traces;  // of the failing device, oldest first
    std::vector<Stack> stacks;       // the stacks blocks and trace entries refer to
};

// Parses a capture (JSON text of at most kMaxCaptureBytes). The error names what is wrong and where.
Result<OomCapture> parse_oom_capture(std::string_view json);
// Reads and parses a capture file.
Result<OomCapture> read_oom_capture(const std::string& path);

}  // namespace baton::gpu_memory

template <>
struct baton::EnumNames<baton::gpu_memory::BlockState> {
    static constexpr std::array list = {"active_allocated", "active_awaiting_free", "inactive"};
};
template <>
struct baton::EnumNames<baton::gpu_memory::TraceAction> {
    static constexpr std::array list = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
                                        "oom",   "snapshot",       "other"};
};
template <>
struct baton::EnumNames<baton::gpu_memory::StepPhase> {
    static constexpr std::array list = {"forward", "backward", "optimizer", "data", "setup", "other"};
};
