#include "core/clock.hpp"

#include <cerrno>
#include <cmath>
#include <ctime>

namespace baton {

double monotonic_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::int64_t unix_millis() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

namespace {

// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), by the era arithmetic
// of the civil calendar (400-year eras of 146097 days). Branch-free and exact for any
// int64 day count we will meet; gmtime_r + snprintf cost ten times more, once per process
// per JSON snapshot.
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2);
}

void put_digits(char* at, std::int64_t v, int width) {
    for (int i = width - 1; i >= 0; --i) {
        at[i] = static_cast<char>('0' + v % 10);
        v /= 10;
    }
}

}  // namespace

std::string rfc3339_utc(std::int64_t unix_ms) {
    std::int64_t secs = unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000;
    const std::int64_t ms = unix_ms - secs * 1000;
    std::int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    std::int64_t rem = secs - days * 86400;
    std::int64_t year;
    unsigned month, day;
    civil_from_days(days, year, month, day);
    if (year < 0 || year > 9999) year = year < 0 ? 0 : 9999;  // RFC 3339 has four-digit years
    char buf[25] = "0000-00-00T00:00:00.000Z";
    put_digits(buf, year, 4);
    put_digits(buf + 5, month, 2);
    put_digits(buf + 8, day, 2);
    put_digits(buf + 11, rem / 3600, 2);
    put_digits(buf + 14, rem / 60 % 60, 2);
    put_digits(buf + 17, rem % 60, 2);
    put_digits(buf + 20, ms, 3);
    return std::string(buf, 24);
}

void sleep_seconds(double seconds) {
    if (!(seconds > 0)) return;
    timespec req{};
    req.tv_sec = static_cast<time_t>(seconds);
    req.tv_nsec = static_cast<long>((seconds - std::floor(seconds)) * 1e9);
    while (nanosleep(&req, &req) != 0 && errno == EINTR) {
    }
}

}  // namespace baton
