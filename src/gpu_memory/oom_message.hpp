// PyTorch's own "CUDA out of memory" message, read into its numbers. The caching allocator prints what
// it knew when the request failed, in two forms:
//   1.x: "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.56 GiB
//         already allocated; 4.75 MiB free; [6.00 GiB allowed; ]14.70 GiB reserved in total by PyTorch)"
//         (before 1.5: "... 14.70 GiB cached)")
//   2.x: "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which
//         1.23 GiB is free. [Process 4121 has 8.40 GiB memory in use. ][Including non-PyTorch memory, this
//         process has 69.50 GiB memory in use. ][12.00 GiB allowed; ]Of the allocated memory 70.12 GiB is
//         allocated by PyTorch, [with 1.00 GiB allocated in private pools (e.g., CUDA Graphs), ]and 6.50 GiB
//         is reserved by PyTorch but unallocated."
// A CUDA error without the allocator's numbers ("CUDA error: out of memory", from a library's own
// cudaMalloc or a context that did not fit) is an OOM too, with nothing to read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::gpu_memory {

// Another process on the GPU, as the 2.x message names it ("Process 4121 has 8.40 GiB memory in use").
struct ProcessMemory {
    std::uint32_t pid = 0;
    std::uint64_t bytes = 0;
};

// Every figure is as printed (two decimals of its unit); absent when the message does not carry it.
struct OomMessage {
    std::optional<std::uint64_t> requested_bytes;    // "Tried to allocate"
    std::optional<unsigned> gpu;                     // CUDA's device number, as the process sees it
    std::optional<std::uint64_t> capacity_bytes;     // the device's total
    std::optional<std::uint64_t> free_bytes;         // free on the device (for every process)
    std::optional<std::uint64_t> allowed_bytes;      // set_per_process_memory_fraction's limit
    std::optional<std::uint64_t> allocated_bytes;    // in tensors of this process (private pools included)
    std::optional<std::uint64_t> reserved_bytes;     // held by this process's caching allocator
    std::optional<std::uint64_t> unallocated_bytes;  // reserved but not in a tensor (reserved - allocated)
    std::optional<std::uint64_t> process_bytes;      // 2.x: this process with non-PyTorch memory (context)
    std::vector<ProcessMemory> others;               // 2.x: the other processes on the device
    bool numbers() const { return requested_bytes.has_value(); }
};

// Whether `line` reports a CUDA out-of-memory failure, and its numbers when it has them; none when the
// line is about something else.
std::optional<OomMessage> parse_oom_message(std::string_view line);

// "20.00 MiB", "1.23 GiB", "0 bytes", "512.00 KiB" (PyTorch's format_size) at the start of `text`;
// advances past it. None when no size is there.
std::optional<std::uint64_t> take_torch_size(std::string_view& text);

// A size as PyTorch's message writes it ("2.00 GiB", "20.00 MiB", "512 bytes"), so that baton's figures
// and the message read alike side by side.
std::string torch_size(double bytes);

}  // namespace baton::gpu_memory
