#include "core/units.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace baton {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// Splits "1.5GiB" into its number and its lower-cased unit; the number as a double, or none when
// it is not plain digits with at most one point.
// "1.5GiB" -> 1.5 x 2^30: a number (digits, at most one point) and a unit of k, m, g, t or p (any
// case) followed by nothing, "b", "i" or "ib". `decimal`: k = 1000 unless the unit says "i" (rates);
// else k = 1024 always (sizes, as nvidia-smi and Slurm count). None for anything else.
std::optional<double> number_with_unit(std::string_view text, bool decimal) {
    std::size_t i = 0;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    const std::string number(text.substr(0, i));
    if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) return std::nullopt;
    std::string unit(text.substr(i));
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double scale = 1;
    if (!unit.empty() && unit != "b") {
        const std::size_t u = std::string_view("kmgtp").find(unit[0]);
        const std::string rest = unit.substr(1);
        const bool binary = rest == "i" || rest == "ib";
        if (u == std::string_view::npos || !(rest.empty() || rest == "b" || binary)) return std::nullopt;
        scale = std::pow(decimal && !binary ? 1000.0 : 1024.0, static_cast<double>(u + 1));
    }
    return std::strtod(number.c_str(), nullptr) *
           scale;  // no exception: an overflow is HUGE_VAL, refused by the callers
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
    const std::optional<double> bytes = number_with_unit(trim(text), false);
    if (!bytes || !(*bytes >= 1) || *bytes > 9.2e18) return std::nullopt;
    return static_cast<std::uint64_t>(std::llround(*bytes));
}

std::optional<double> parse_rate(std::string_view text) {
    text = trim(text);
    if (text.size() > 2 && (text.substr(text.size() - 2) == "/s" || text.substr(text.size() - 2) == "/S"))
        text.remove_suffix(2);
    const std::optional<double> rate = number_with_unit(trim(text), true);
    if (!rate || !(*rate >= 1) || *rate > 1e18) return std::nullopt;
    return rate;
}

std::string format_rate(double bytes_per_second) {
    const char* units[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
    double v = bytes_per_second;
    int u = 0;
    while (std::abs(v) >= 999.5 && u < 4) {
        v /= 1000;
        ++u;
    }
    char out[32];
    if (u == 0 || std::abs(v) >= 99.95)
        std::snprintf(out, sizeof out, "%.0f %s", v, units[u]);
    else if (std::abs(v) >= 9.995)
        std::snprintf(out, sizeof out, "%.1f %s", v, units[u]);
    else
        std::snprintf(out, sizeof out, "%.2f %s", v, units[u]);
    return out;
}

std::string format_size(std::uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    double unit = 1;
    while (u < 5 && static_cast<double>(bytes) >= unit * 1024) {
        unit *= 1024;
        ++u;
    }
    char out[32];
    const double v = static_cast<double>(bytes) / unit;
    if (v == std::floor(v))
        std::snprintf(out, sizeof out, "%.0f %s", v, units[u]);
    else
        std::snprintf(out, sizeof out, "%.1f %s", v, units[u]);
    return out;
}

std::string format_gib(double bytes, int decimals) {
    char out[48];
    std::snprintf(out, sizeof out, "%.*f GiB", decimals, bytes / 1073741824.0);
    return out;
}

std::string format_elapsed(std::int64_t s) {
    s = std::max<std::int64_t>(0, s);
    char out[48];
    if (s >= 86400)
        std::snprintf(out, sizeof out, "%lldd%02lldh", static_cast<long long>(s / 86400),
                      static_cast<long long>(s % 86400 / 3600));
    else if (s >= 3600)
        std::snprintf(out, sizeof out, "%lldh%02lldm", static_cast<long long>(s / 3600),
                      static_cast<long long>(s % 3600 / 60));
    else if (s >= 60)
        std::snprintf(out, sizeof out, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
    else
        std::snprintf(out, sizeof out, "%llds", static_cast<long long>(s));
    return out;
}

}  // namespace baton
