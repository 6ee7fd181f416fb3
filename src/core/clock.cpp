#include "core/clock.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
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

std::string rfc3339_utc(std::int64_t unix_ms) {
    time_t secs = static_cast<time_t>(unix_ms / 1000);
    tm t{};
    gmtime_r(&secs, &t);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                  t.tm_hour, t.tm_min, t.tm_sec, static_cast<int>(unix_ms % 1000));
    return buf;
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
