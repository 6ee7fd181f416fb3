// The process-record guard: 24- vs 32-byte strides, v1 records, "not available" memory.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sample/gpu/nvml_api.hpp"
#include "sample/gpu/process_records.hpp"

using namespace baton;

namespace {
template <typename Rec>
std::vector<unsigned char> pack(const std::vector<Rec>& recs, std::size_t room = 32 * 16) {
    std::vector<unsigned char> buf(room, 0);
    std::memcpy(buf.data(), recs.data(), recs.size() * sizeof(Rec));
    return buf;
}
}  // namespace

TEST(ProcessRecords, V2RecordsAt24Bytes) {
    std::vector<nvmlProcessInfo_v2_t> r = {{100, 1ull << 30, 0xFFFFFFFF, 0xFFFFFFFF},
                                           {200, 2ull << 30, 0xFFFFFFFF, 0xFFFFFFFF},
                                           {300, 3ull << 30, 0xFFFFFFFF, 0xFFFFFFFF}};
    auto buf = pack(r);
    EXPECT_EQ(choose_process_stride(buf.data(), buf.size(), 3, 24, 80ull << 30), 24u);
    auto d = decode_process_records(buf.data(), buf.size(), 3, 24, 80ull << 30);
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(d[2].pid, 300u);
    EXPECT_EQ(d[2].used_memory_bytes, 3ull << 30);
}

TEST(ProcessRecords, R535RecordsAt32BytesAreDetected) {
    std::vector<nvmlProcessInfo_r535_t> r = {{5001, 10ull << 30, 0xFFFFFFFF, 0xFFFFFFFF, 0},
                                             {5002, 20ull << 30, 0xFFFFFFFF, 0xFFFFFFFF, 0},
                                             {5003, 30ull << 30, 0xFFFFFFFF, 0xFFFFFFFF, 0}};
    auto buf = pack(r);
    EXPECT_EQ(choose_process_stride(buf.data(), buf.size(), 3, 24, 80ull << 30), 32u);
    auto d = decode_process_records(buf.data(), buf.size(), 3, 24, 80ull << 30);
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(d[1].pid, 5002u);
    EXPECT_EQ(d[1].used_memory_bytes, 20ull << 30);
    EXPECT_EQ(d[2].pid, 5003u);
}

TEST(ProcessRecords, V1RecordsAndNotAvailableMemory) {
    std::vector<nvmlProcessInfo_v1_t> r = {{9980, 6498025472ull}, {10121, NVML_VALUE_NOT_AVAILABLE}};
    auto buf = pack(r);
    auto d = decode_process_records(buf.data(), buf.size(), 2, 16, 0);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].pid, 9980u);
    EXPECT_EQ(d[1].pid, 10121u);
    EXPECT_FALSE(d[1].used_memory_bytes.has_value());
}

TEST(ProcessRecords, CountLargerThanBufferIsClamped) {
    std::vector<unsigned char> buf(48, 0);
    auto d = decode_process_records(buf.data(), buf.size(), 1000, 24, 0);
    EXPECT_LE(d.size(), 2u);
}
