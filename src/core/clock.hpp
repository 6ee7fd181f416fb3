// Time sources. Rates use the monotonic clock; the wall clock only labels snapshots.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

// Seconds on CLOCK_MONOTONIC, for deltas.
double monotonic_seconds();

// Milliseconds since the Unix epoch (CLOCK_REALTIME).
std::int64_t unix_millis();

// RFC 3339 UTC time with milliseconds, e.g. "2026-11-29T20:41:07.123Z".
std::string rfc3339_utc(std::int64_t unix_ms);

// Parses an RFC 3339 time ("2026-11-29T20:41:07Z", with an optional fraction of a second and a
// "Z" or "+HH:MM"/"-HH:MM" offset) to Unix milliseconds; nullopt when malformed.
std::optional<std::int64_t> parse_rfc3339(std::string_view text);

// Sleeps for `seconds` (no-op for <= 0); resumes after signals until the time has passed.
void sleep_seconds(double seconds);

}  // namespace baton
