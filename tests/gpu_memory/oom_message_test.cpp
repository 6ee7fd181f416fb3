// PyTorch's out-of-memory messages, in the forms its versions print, read into their numbers.
#include "gpu_memory/oom_message.hpp"

#include <gtest/gtest.h>

using namespace baton::gpu_memory;

namespace {
constexpr std::uint64_t MiB = 1048576, GiB = 1073741824;
std::uint64_t gib(double v) {
    return static_cast<std::uint64_t>(v * GiB + 0.5);
}
std::uint64_t mib(double v) {
    return static_cast<std::uint64_t>(v * MiB + 0.5);
}
}  // namespace

TEST(OomMessage, PyTorch2FormWithOtherProcesses) {
    const auto m = parse_oom_message(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.19 GiB of which 1.23 GiB is free. Process 4121 has 8.40 GiB memory in use. Including non-PyTorch "
        "memory, this process has 69.50 GiB memory in use. Of the allocated memory 60.12 GiB is allocated by "
        "PyTorch, and 6.50 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
        "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
        "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->requested_bytes, 2 * GiB);
    EXPECT_EQ(m->gpu, 0u);
    EXPECT_EQ(m->capacity_bytes, gib(79.19));
    EXPECT_EQ(m->free_bytes, gib(1.23));
    EXPECT_EQ(m->allocated_bytes, gib(60.12));
    EXPECT_EQ(m->unallocated_bytes, gib(6.5));
    EXPECT_EQ(m->reserved_bytes, gib(60.12) + gib(6.5));
    EXPECT_EQ(m->process_bytes, gib(69.5));
    ASSERT_EQ(m->others.size(), 1u);
    EXPECT_EQ(m->others[0].pid, 4121u);
    EXPECT_EQ(m->others[0].bytes, gib(8.4));
    EXPECT_FALSE(m->allowed_bytes);
}

TEST(OomMessage, PyTorch2FormWithPrivatePoolsAndALimit) {
    const auto m = parse_oom_message(
        "CUDA out of memory. Tried to allocate 256.00 MiB. GPU 3 has a total capacity of 47.53 GiB of which 16.88 "
        "MiB is free. Including non-PyTorch memory, this process has 23.51 GiB memory in use. 24.00 GiB allowed; Of "
        "the allocated memory 22.14 GiB is allocated by PyTorch, with 1.00 GiB allocated in private pools (e.g., "
        "CUDA Graphs), and 57.79 MiB is reserved by PyTorch but unallocated.");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->requested_bytes, 256 * MiB);
    EXPECT_EQ(m->gpu, 3u);
    EXPECT_EQ(m->free_bytes, mib(16.88));
    EXPECT_EQ(m->allowed_bytes, 24 * GiB);
    EXPECT_EQ(m->allocated_bytes, gib(22.14));
    EXPECT_EQ(m->unallocated_bytes, mib(57.79));
    EXPECT_TRUE(m->others.empty());
}

TEST(OomMessage, PyTorch1Forms) {
    auto m = parse_oom_message(
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1; 15.78 GiB total capacity; 14.56 GiB "
        "already allocated; 4.75 MiB free; 14.70 GiB reserved in total by PyTorch) If reserved memory is >> "
        "allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory "
        "Management and PYTORCH_CUDA_ALLOC_CONF");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->requested_bytes, 20 * MiB);
    EXPECT_EQ(m->gpu, 1u);
    EXPECT_EQ(m->capacity_bytes, gib(15.78));
    EXPECT_EQ(m->allocated_bytes, gib(14.56));
    EXPECT_EQ(m->free_bytes, mib(4.75));
    EXPECT_EQ(m->reserved_bytes, gib(14.70));
    EXPECT_EQ(m->unallocated_bytes, gib(14.70) - gib(14.56));
    EXPECT_FALSE(m->process_bytes);

    m = parse_oom_message(
        "RuntimeError: CUDA out of memory. Tried to allocate 36.00 MiB (GPU 0; 7.79 GiB total capacity; 5.13 GiB "
        "already allocated; 20.75 MiB free; 6.00 GiB allowed; 5.34 GiB reserved in total by PyTorch)");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->allowed_bytes, 6 * GiB);
    EXPECT_EQ(m->reserved_bytes, gib(5.34));

    // Before 1.5 the reserve was "cached".
    m = parse_oom_message(
        "RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 9.83 GiB "
        "already allocated; 11.38 MiB free; 9.95 GiB cached)");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->reserved_bytes, gib(9.95));
    EXPECT_EQ(m->free_bytes, mib(11.38));
}

TEST(OomMessage, AnOomWithoutTheAllocatorsNumbers) {
    for (const char* line : {"RuntimeError: CUDA error: out of memory",
                             "torch.cuda.OutOfMemoryError: CUDA out of memory.", "OutOfMemoryError"}) {
        const auto m = parse_oom_message(line);
        ASSERT_TRUE(m) << line;
        EXPECT_FALSE(m->numbers()) << line;
    }
    EXPECT_FALSE(parse_oom_message("epoch 3: loss 0.12"));
    EXPECT_FALSE(parse_oom_message("Out of memory: Killed process 4121 (python3)"));  // the kernel's
}

TEST(OomMessage, SizesInEachUnitAndBrokenOnes) {
    for (const auto& [text, want] : std::initializer_list<std::pair<const char*, std::uint64_t>>{
             {"0 bytes", 0}, {"512 bytes", 512}, {"1.50 KiB", 1536}, {"2.00 MiB", 2 * MiB}, {"1.00 TiB", 1024 * GiB}}) {
        std::string_view s = text;
        EXPECT_EQ(take_torch_size(s), want) << text;
        EXPECT_TRUE(s.empty()) << text;
    }
    for (const char* text : {"", "GiB", "12", "12 parsecs", "-1.00 GiB", "1e400 GiB", "12GiB"}) {
        std::string_view s = text;
        EXPECT_FALSE(take_torch_size(s)) << text;
    }
    // A message cut short or garbled keeps what it has and never reads past its end.
    const auto m = parse_oom_message("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->requested_bytes, 2 * GiB);
    EXPECT_FALSE(m->capacity_bytes);
    EXPECT_FALSE(parse_oom_message("CUDA out of memory. Tried to allocate  GiB")->numbers());
}
