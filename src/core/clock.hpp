// Time sources. Rates use the monotonic clock; the wall clock only labels snapshots.
#pragma once

#include <cstdint>
#include <string>

namespace baton {

// Seconds on CLOCK_MONOTONIC, for deltas.
double monotonic_seconds();

// Milliseconds since the Unix epoch (CLOCK_REALTIME).
std::int64_t unix_millis();

// RFC 3339 UTC time with milliseconds, e.g. "2026-11-29T20:41:07.123Z".
std::string rfc3339_utc(std::int64_t unix_ms);

// Sleeps for `seconds` (no-op for <= 0); resumes after signals until the time has passed.
void sleep_seconds(double seconds);

}  // namespace baton
