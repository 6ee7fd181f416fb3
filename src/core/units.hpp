// Sizes and rates as users type them on the command line, and rates as baton prints them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

// The two unit sizes baton shows: memory in GiB (binary, as nvidia-smi and the kernel count it), rates in
// MB/s (decimal, as disks and links are sold).
inline constexpr double kBytesPerGiB = 1073741824.0;
inline constexpr double kBytesPerMB = 1e6;

// "20G", "20GiB", "1.5T", "512m", "4096" (bytes): binary units (G = 2^30, as nvidia-smi, Slurm's
// --mem and fio's --size count). None for anything else, 0, or more than 2^63.
std::optional<std::uint64_t> parse_size(std::string_view text);

// A transfer rate in bytes per second: "2GB/s", "500MB/s", "1.5G" (the "/s" may be left out).
// Decimal units (G = 1e9, as disks, networks and nccl-tests count), binary ones with "iB"
// ("2GiB/s"). None for anything else, 0, or more than 1e18.
std::optional<double> parse_rate(std::string_view text);

// A rate for people, in decimal units with three significant digits: "54.8 GB/s", "912 MB/s",
// "12.0 kB/s", "800 B/s".
std::string format_rate(double bytes_per_second);

// Which formatter: format_size for a size someone asked for or a file's (it picks the unit);
// format_gib for memory in findings, tables and checks (always GiB, so amounts side by side
// compare at a glance); format_rate for a bandwidth.

// Memory in GiB with `decimals` decimals: "30.0 GiB", "0.5 GiB" (decimals 0: "80 GiB").
std::string format_gib(double bytes, int decimals = 1);

// A time span for people, to the second: "42s", "3m05s", "1h02m", "2d03h" (two units, the second
// zero-padded; a negative span reads as "0s").
std::string format_elapsed(std::int64_t seconds);

// A size for people, in the largest binary unit it fills: "4 KiB", "1 GiB", "512 B", "3.2 GiB"
// (whole numbers when exact, else one decimal).
std::string format_size(std::uint64_t bytes);

}  // namespace baton
