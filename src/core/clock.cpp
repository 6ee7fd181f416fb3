#include "core/clock.hpp"

#include <cerrno>
#include <cmath>
#include <ctime>

#include "core/text_parse.hpp"

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

// The inverse (same source): days since 1970-01-01 of a proleptic Gregorian date.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// `n` decimal digits at s[at]; -1 when any is not a digit.
int digits(std::string_view s, std::size_t at, std::size_t n) {
    if (at + n > s.size()) return -1;
    return text::parse_digits<int>(s.substr(at, n)).value_or(-1);
}

void put_digits(char* at, std::int64_t v, int width) {
    for (int i = width - 1; i >= 0; --i) {
        at[i] = static_cast<char>('0' + v % 10);
        v /= 10;
    }
}

}  // namespace

std::string local_time_text(std::int64_t unix_ms, const char* format) {
    const std::time_t t = static_cast<std::time_t>(unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[64];
    const std::size_t n = std::strftime(buf, sizeof buf, format, &tm);
    return std::string(buf, n);
}

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

std::optional<std::int64_t> parse_rfc3339(std::string_view s) {
    const int year = digits(s, 0, 4), month = digits(s, 5, 2), day = digits(s, 8, 2);
    const int hour = digits(s, 11, 2), minute = digits(s, 14, 2), second = digits(s, 17, 2);
    if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 ||
        minute > 59 || second < 0 || second > 60 || s[4] != '-' || s[7] != '-' ||
        (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' || s[16] != ':')
        return std::nullopt;
    std::size_t at = 19;
    std::int64_t ms = 0;
    if (at < s.size() && s[at] == '.') {
        ++at;
        int scale = 100;
        std::size_t start = at;
        for (; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at) {
            ms += (s[at] - '0') * scale;
            scale /= 10;
        }
        if (at == start) return std::nullopt;
    }
    std::int64_t offset = 0;
    if (at < s.size() && (s[at] == 'Z' || s[at] == 'z')) {
        ++at;
    } else if (at < s.size() && (s[at] == '+' || s[at] == '-')) {
        const int oh = digits(s, at + 1, 2), om = digits(s, at + 4, 2);
        if (oh < 0 || om < 0 || oh > 23 || om > 59 || at + 3 >= s.size() || s[at + 3] != ':') return std::nullopt;
        offset = (s[at] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
        at += 6;
    } else {
        return std::nullopt;
    }
    if (at != s.size()) return std::nullopt;
    const std::int64_t days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
    const std::int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset;
    return secs * 1000 + ms;
}

std::optional<double> parse_duration(std::string_view text) {
    if (text.empty()) return std::nullopt;
    struct Unit {
        std::string_view name;
        double seconds;
    };
    // Longest names first, so "ms" and "min" are not read as "m" followed by junk.
    static constexpr Unit kUnits[] = {{"min", 60}, {"sec", 1}, {"ms", 0.001}, {"hr", 3600},
                                      {"s", 1},    {"m", 60},  {"h", 3600},   {"d", 86400}};
    double total = 0;
    bool bare = true;  // a lone number without a unit: seconds
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t start = i;
        while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
        const std::string_view number = text.substr(start, i - start);
        if (number.empty() || number == "." || number.find('.') != number.rfind('.')) return std::nullopt;
        double value = 0, scale = 1;
        bool fraction = false;
        for (char c : number) {
            if (c == '.') {
                fraction = true;
                continue;
            }
            value = value * 10 + (c - '0');
            if (fraction) scale *= 10;
        }
        value /= scale;
        if (i == text.size()) {
            if (!bare) return std::nullopt;  // "1m30": the last part needs its unit
            total += value;
            break;
        }
        bare = false;
        const Unit* unit = nullptr;
        for (const Unit& u : kUnits)
            if (text.substr(i, u.name.size()) == u.name) {
                unit = &u;
                break;
            }
        if (!unit) return std::nullopt;
        i += unit->name.size();
        total += value * unit->seconds;
    }
    if (!std::isfinite(total)) return std::nullopt;
    return total;
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
