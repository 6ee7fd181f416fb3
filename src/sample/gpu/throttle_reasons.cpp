#include "sample/gpu/throttle_reasons.hpp"

#include <cstdio>

namespace baton {

std::vector<std::string> decode_throttle_reasons(unsigned long long mask) {
    static constexpr const char* names[] = {
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
    std::vector<std::string> out;
    for (unsigned bit = 0; bit < 64; ++bit) {
        unsigned long long b = 1ULL << bit;
        if (!(mask & b)) continue;
        if (bit < std::size(names)) {
            out.emplace_back(names[bit]);
        } else {
            char buf[32];
            std::snprintf(buf, sizeof buf, "unknown_0x%llx", b);
            out.emplace_back(buf);
        }
    }
    return out;
}

}  // namespace baton
