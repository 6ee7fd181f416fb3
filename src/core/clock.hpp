// Time sources. Rates use the monotonic clock; the wall clock only labels snapshots.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

// Seconds on CLOCK_MONOTONIC, for deltas.
double monotonic_seconds();

// Milliseconds since the Unix epoch (CLOCK_REALTIME).
std::int64_t unix_millis();

// `unix_ms` in this machine's time zone, as strftime's `format` writes it ("%H:%M:%S": "14:02:10"),
// for what people read on the console (at most 63 characters).
std::string local_time_text(std::int64_t unix_ms, const char* format);

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

// When the samples of a loop at a fixed interval are due (snapshot, diagnose, run, top): the
// first at once; the second a full interval after the first ended, because the first take of a
// Sampler includes its priming read and wait (without this, the second sample of `--interval 0.1`
// came 2 ms after the first and its rates showed a CPU peak of 900 %); then every interval after
// the previous one was due, without a burst to catch up after a slow tick.
class SampleSchedule {
  public:
    explicit SampleSchedule(double interval_seconds) : interval_(interval_seconds) {}
    // Monotonic seconds when the next sample is due (0 before the first: at once).
    double next() const { return next_; }
    // Call after each sample with monotonic_seconds().
    void taken(double now) {
        next_ = first_ ? now + interval_ : std::max(next_ + interval_, now);
        first_ = false;
    }

  private:
    double interval_;
    double next_ = 0;
    bool first_ = true;
};

}  // namespace baton
