// Decoding of NVML's clock-event (throttle) reason bitmask into stable names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace baton {

// Names, in bit order: gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown,
// sync_boost, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown,
// display_clock_setting; unknown bits as "unknown_0x...". Documented in docs/snapshot-schema.md.
std::vector<std::string> decode_throttle_reasons(unsigned long long mask);

// Every named reason, in bit order (the Prometheus view gives each a 0/1 series).
std::vector<std::string_view> known_throttle_reasons();

// The inverse over the named reasons: a bit per name, in the same order (unknown names add
// nothing). What the run history stores per sample.
std::uint16_t throttle_reason_bits(const std::vector<std::string>& names);

// True for the reasons that slow a busy GPU down (power cap, thermal, hardware slowdown, power
// brake), as against idle or settings.
bool throttle_reason_slows(const std::string& name);

}  // namespace baton
