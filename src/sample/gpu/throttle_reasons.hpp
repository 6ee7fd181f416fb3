// Decoding of NVML's clock-event (throttle) reason bitmask into stable names.
#pragma once

#include <string>
#include <vector>

namespace baton {

// Names, in bit order: gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown,
// sync_boost, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown,
// display_clock_setting; unknown bits as "unknown_0x...". Documented in docs/snapshot-schema.md.
std::vector<std::string> decode_throttle_reasons(unsigned long long mask);

}  // namespace baton
