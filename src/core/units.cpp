#include "core/units.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace baton {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// Splits "1.5GiB" into its number and its lower-cased unit; the number as a double, or none when
// it is not plain digits with at most one point.
std::optional<double> split_number(std::string_view text, std::string& unit) {
    std::size_t i = 0;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    const std::string number(text.substr(0, i));
    if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) return std::nullopt;
    unit.assign(text.substr(i));
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return std::stod(number);
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
    std::string unit;
    const std::optional<double> number = split_number(trim(text), unit);
    if (!number) return std::nullopt;
    double scale = 1;
    if (!unit.empty() && unit != "b") {
        const std::string_view units = "kmgtp";
        const std::size_t u = units.find(unit[0]);
        const std::string rest = unit.substr(1);
        if (u == std::string_view::npos || !(rest.empty() || rest == "b" || rest == "i" || rest == "ib"))
            return std::nullopt;
        scale = std::pow(1024.0, static_cast<double>(u + 1));
    }
    const double bytes = *number * scale;
    if (!(bytes >= 1) || bytes > 9.2e18) return std::nullopt;
    return static_cast<std::uint64_t>(std::llround(bytes));
}

std::optional<double> parse_rate(std::string_view text) {
    text = trim(text);
    if (text.size() > 2 && (text.substr(text.size() - 2) == "/s" || text.substr(text.size() - 2) == "/S"))
        text.remove_suffix(2);
    std::string unit;
    const std::optional<double> number = split_number(trim(text), unit);
    if (!number) return std::nullopt;
    double scale = 1;
    if (!unit.empty() && unit != "b") {
        const std::string_view units = "kmgtp";
        const std::size_t u = units.find(unit[0]);
        const std::string rest = unit.substr(1);
        if (u == std::string_view::npos) return std::nullopt;
        if (rest.empty() || rest == "b")
            scale = std::pow(1000.0, static_cast<double>(u + 1));
        else if (rest == "ib")
            scale = std::pow(1024.0, static_cast<double>(u + 1));
        else
            return std::nullopt;
    }
    const double rate = *number * scale;
    if (!(rate >= 1) || rate > 1e18) return std::nullopt;
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

}  // namespace baton
