#include "sample/gpu/throttle_reasons.hpp"

#include <cstdio>

namespace baton {

namespace {

// NVML's clock-event reason bits, in order.
constexpr const char* kNames[] = {
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "display_clock_setting",
};

}  // namespace

std::vector<std::string_view> known_throttle_reasons() {
    return {std::begin(kNames), std::end(kNames)};
}

std::vector<std::string> decode_throttle_reasons(unsigned long long mask) {
    std::vector<std::string> out;
    for (unsigned bit = 0; bit < 64; ++bit) {
        unsigned long long b = 1ULL << bit;
        if (!(mask & b)) continue;
        if (bit < std::size(kNames)) {
            out.emplace_back(kNames[bit]);
        } else {
            char buf[32];
            std::snprintf(buf, sizeof buf, "unknown_0x%llx", b);
            out.emplace_back(buf);
        }
    }
    return out;
}

std::uint16_t throttle_reason_bits(const std::vector<std::string>& names) {
    std::uint16_t bits = 0;
    for (const std::string& n : names)
        for (unsigned bit = 0; bit < std::size(kNames); ++bit)
            if (n == kNames[bit]) bits = static_cast<std::uint16_t>(bits | (1u << bit));
    return bits;
}

bool throttle_reason_slows(const std::string& r) {
    return r == "sw_power_cap" || r == "hw_slowdown" || r == "sw_thermal_slowdown" || r == "hw_thermal_slowdown" ||
           r == "hw_power_brake_slowdown";
}

}  // namespace baton
