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

// Parses a duration to seconds, the one grammar every flag that takes a time accepts: a bare
// number is seconds ("90", "0.5"); otherwise one or more number+unit parts, largest first or
// not, summed: "90s", "1m30s", "5min", "2h", "1.5h", "30d", "250ms". Units: ms, s/sec, m/min,
// h/hr, d. Blanks, signs, exponents, "inf" and "nan" are refused (nullopt), so is an empty text.
// Zero is a duration ("0", "0s"); callers that need a positive one check the range.
std::optional<double> parse_duration(std::string_view text);

// Sleeps for `seconds` (no-op for <= 0); resumes after signals until the time has passed.
void sleep_seconds(double seconds);

}  // namespace baton
