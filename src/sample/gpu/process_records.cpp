#include "sample/gpu/process_records.hpp"

#include <cstring>

#include "sample/gpu/nvml_api.hpp"

namespace baton {

namespace {

struct Fields {
    std::uint32_t pid;
    std::uint64_t mem;
    std::uint32_t gi, ci;
};

Fields read_at(const unsigned char* p, bool with_instances) {
    Fields f{};
    std::memcpy(&f.pid, p, 4);
    std::memcpy(&f.mem, p + 8, 8);
    if (with_instances) {
        std::memcpy(&f.gi, p + 16, 4);
        std::memcpy(&f.ci, p + 20, 4);
    }
    return f;
}

// A record is plausible when its pid is a real pid (> 0, < 2^22 = Linux's PID_MAX_LIMIT),
// its memory is "not available" or within the GPU's memory, and its instance ids are
// "none" (0xFFFFFFFF) or small (at most 7 MIG instances).
bool plausible(const Fields& f, std::uint64_t memory_total) {
    if (f.pid == 0 || f.pid > (1u << 22)) return false;
    if (f.mem != NVML_VALUE_NOT_AVAILABLE && memory_total && f.mem > memory_total) return false;
    auto small = [](std::uint32_t id) { return id == 0xFFFFFFFFu || id < 64; };
    return small(f.gi) && small(f.ci);
}

int plausible_count(const unsigned char* bytes, std::size_t size, unsigned count, std::size_t stride,
                    std::uint64_t total) {
    int ok = 0;
    for (unsigned i = 0; i < count; ++i) {
        if ((i + 1) * stride > size) return -1;
        if (plausible(read_at(bytes + i * stride, stride >= 24), total)) ++ok;
    }
    return ok;
}

}  // namespace

std::size_t choose_process_stride(const unsigned char* bytes, std::size_t size, unsigned count, std::size_t stride,
                                  std::uint64_t memory_total) {
    if (stride != 24 || count < 2) return stride;
    int as24 = plausible_count(bytes, size, count, 24, memory_total);
    int as32 = plausible_count(bytes, size, count, 32, memory_total);
    return as32 > as24 ? 32 : 24;
}

std::vector<RawGpuProcess> decode_process_records(const unsigned char* bytes, std::size_t size, unsigned count,
                                                  std::size_t stride, std::uint64_t memory_total) {
    std::size_t s = choose_process_stride(bytes, size, count, stride, memory_total);
    std::vector<RawGpuProcess> out;
    for (unsigned i = 0; i < count && (i + 1) * s <= size; ++i) {
        Fields f = read_at(bytes + i * s, s >= 24);
        RawGpuProcess p;
        p.pid = f.pid;
        if (f.mem != NVML_VALUE_NOT_AVAILABLE) p.used_memory_bytes = f.mem;
        // 0xFFFFFFFF: not in a MIG instance. Ids are small (at most 7 instances); anything else is
        // a record layout we misread, better absent than wrong.
        if (s >= 24 && f.gi < 64 && f.ci < 64) {
            p.gpu_instance_id = f.gi;
            p.compute_instance_id = f.ci;
        }
        out.push_back(p);
    }
    return out;
}

}  // namespace baton
