// Decoding the per-GPU process list whatever record layout the driver wrote.
//
// R535 drivers write 32-byte records through nvmlDeviceGetComputeRunningProcesses_v3 while
// other drivers write the 24-byte v2 record through the same symbol (design.md). We hand the
// driver a buffer with room for 32-byte records, then pick the stride whose records look
// sane; with one record both strides read the same fields, so the choice does not matter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace baton {

struct RawGpuProcess {
    std::uint32_t pid = 0;
    std::optional<std::uint64_t> used_memory_bytes;                     // absent for NVML_VALUE_NOT_AVAILABLE
    std::optional<std::uint32_t> gpu_instance_id, compute_instance_id;  // 24- and 32-byte records, under MIG
};

// `bytes` holds `count` records written by the driver. `stride` is 16 (v1 symbol), or 24
// for _v2/_v3 symbols, in which case 32 is also tried. `memory_total` bounds plausible
// memory values (0: unknown).
std::vector<RawGpuProcess> decode_process_records(const unsigned char* bytes, std::size_t buffer_size, unsigned count,
                                                  std::size_t stride, std::uint64_t memory_total);

// Stride that decode_process_records chose, for tests and diagnostics.
std::size_t choose_process_stride(const unsigned char* bytes, std::size_t buffer_size, unsigned count,
                                  std::size_t stride, std::uint64_t memory_total);

}  // namespace baton
