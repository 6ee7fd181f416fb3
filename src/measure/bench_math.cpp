#include "measure/bench_math.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/text_parse.hpp"

namespace baton::measure {

std::optional<double> pcie_lane_bytes_per_second(unsigned gen) {
    // Transfer rate (GT/s, one bit per transfer and lane) x line-code efficiency / 8 bits.
    switch (gen) {
        case 1:
            return 2.5e9 * 8 / 10 / 8;
        case 2:
            return 5e9 * 8 / 10 / 8;
        case 3:
            return 8e9 * 128 / 130 / 8;
        case 4:
            return 16e9 * 128 / 130 / 8;
        case 5:
            return 32e9 * 128 / 130 / 8;
        case 6:
            return 64e9 * 242 / 256 / 8;  // PAM4 with FLIT encoding: 242 payload bytes of 256
        default:
            return std::nullopt;
    }
}

std::optional<double> pcie_link_bytes_per_second(unsigned gen, unsigned width) {
    const std::optional<double> lane = pcie_lane_bytes_per_second(gen);
    if (!lane || width == 0 || width > 32) return std::nullopt;
    return *lane * width;
}

unsigned pcie_tlp_overhead_bytes(unsigned gen) {
    return gen >= 6 ? 16 : 24;
}

std::optional<PcieCeiling> pcie_ceiling(unsigned gen, unsigned width, unsigned max_payload) {
    const std::optional<double> line = pcie_link_bytes_per_second(gen, width);
    if (!line || max_payload == 0) return std::nullopt;
    const unsigned overhead = pcie_tlp_overhead_bytes(gen);
    PcieCeiling c;
    c.bytes_per_second = *line * max_payload / static_cast<double>(max_payload + overhead);
    static constexpr const char* kRates[] = {"", "2.5", "5", "8", "16", "32", "64"};
    static constexpr const char* kCodes[] = {"", "8/10", "8/10", "128/130", "128/130", "128/130", "242/256"};
    c.derivation = fmt::format("{} GT/s x {} lanes / 8 x {} x {}/({}+{}) = {:.1f} GB/s", kRates[gen], width,
                               kCodes[gen], max_payload, max_payload, overhead, c.bytes_per_second / 1e9);
    return c;
}

std::optional<unsigned> pcie_max_payload_from_config(std::string_view config) {
    auto byte = [&](std::size_t at) -> std::optional<unsigned> {
        if (at >= config.size()) return std::nullopt;
        return static_cast<unsigned char>(config[at]);
    };
    const std::optional<unsigned> status = byte(0x06);
    if (!status || !(*status & 0x10)) return std::nullopt;  // no capability list
    std::optional<unsigned> at = byte(0x34);
    // The list lives in 0x40..0xff; at most 48 entries fit, so a loop in a damaged list ends.
    for (int hops = 0; at && *at >= 0x40 && hops < 48; ++hops) {
        const unsigned cap = *at & ~3u;
        const std::optional<unsigned> id = byte(cap), next = byte(cap + 1);
        if (!id || !next) return std::nullopt;
        if (*id == 0x10) {  // PCI Express
            const std::optional<unsigned> control = byte(cap + 8);
            if (!control) return std::nullopt;
            const unsigned code = (*control >> 5) & 7;
            if (code > 5) return std::nullopt;  // reserved
            return 128u << code;
        }
        at = next;
    }
    return std::nullopt;
}

std::optional<unsigned> pcie_gen_from_speed(std::string_view s) {
    std::string_view rest = s;
    const std::optional<double> gts = text::take_double(rest);
    if (!gts) return std::nullopt;
    const std::pair<double, unsigned> gens[] = {{2.5, 1}, {5, 2}, {8, 3}, {16, 4}, {32, 5}, {64, 6}};
    for (const auto& [rate, gen] : gens)
        if (*gts > rate - 0.1 && *gts < rate + 0.1) return gen;
    return std::nullopt;
}

std::optional<Collective> parse_collective(std::string_view name) {
    for (Collective c :
         {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::broadcast})
        if (name == collective_name(c)) return c;
    return std::nullopt;
}

const char* collective_name(Collective c) {
    switch (c) {
        case Collective::all_reduce:
            return "all_reduce";
        case Collective::all_gather:
            return "all_gather";
        case Collective::reduce_scatter:
            return "reduce_scatter";
        case Collective::broadcast:
            return "broadcast";
    }
    return "?";
}

double bus_factor(Collective c, int ranks) {
    // nccl-tests' doc/PERFORMANCE.md: the factor makes busbw comparable with the hardware's
    // link bandwidth, whatever the number of ranks.
    const double n = ranks < 1 ? 1 : ranks;
    switch (c) {
        case Collective::all_reduce:
            return 2 * (n - 1) / n;
        case Collective::all_gather:
        case Collective::reduce_scatter:
            return (n - 1) / n;
        case Collective::broadcast:
            return 1;
    }
    return 1;
}

CollectiveFigures collective_figures(Collective c, int ranks, double bytes, double seconds) {
    CollectiveFigures f;
    if (!(seconds > 0)) return f;
    f.time_us = seconds * 1e6;
    f.algbw_gbps = bytes / seconds / 1e9;
    f.busbw_gbps = f.algbw_gbps * bus_factor(c, ranks);
    return f;
}

double weak_scaling_efficiency(double throughput_n, int n, double throughput_1) {
    if (n < 1 || !(throughput_1 > 0)) return 0;
    return throughput_n / (n * throughput_1);
}

std::string link_verdict(std::optional<double> share, double ok_share, const std::string& contention) {
    if (!share) return "measured";
    if (*share >= ok_share) return "ok";
    return contention.empty() ? "degraded" : "saturated";
}

std::string need_verdict(double measured, double need) {
    return measured >= need ? "ok" : "too_slow";
}

namespace {

std::uint16_t word(std::string_view raw, std::size_t at) {
    std::uint16_t v = 0;
    std::memcpy(&v, raw.data() + at, 2);  // SMBIOS is little-endian, like every host baton runs on
    return v;
}

std::uint32_t dword(std::string_view raw, std::size_t at) {
    std::uint32_t v = 0;
    std::memcpy(&v, raw.data() + at, 4);
    return v;
}

const char* memory_type_name(unsigned code) {
    // SMBIOS 3.x, table "Memory Device - Type".
    static const std::map<unsigned, const char*> names = {
        {0x12, "DDR"},    {0x13, "DDR2"},   {0x18, "DDR3"},   {0x1A, "DDR4"}, {0x1B, "LPDDR"},
        {0x1C, "LPDDR2"}, {0x1D, "LPDDR3"}, {0x1E, "LPDDR4"}, {0x20, "HBM"},  {0x21, "HBM2"},
        {0x22, "DDR5"},   {0x23, "LPDDR5"}, {0x24, "HBM3"}};
    const auto it = names.find(code);
    return it == names.end() ? "" : it->second;
}

}  // namespace

std::optional<MemoryDevice> parse_smbios_memory_device(std::string_view raw) {
    // Offsets of SMBIOS's type 17: 0x08 total width, 0x0A data width, 0x0C size, 0x12 type,
    // 0x15 speed, 0x1C extended size, 0x20 configured speed, 0x54/0x58 their 32-bit forms.
    if (raw.size() < 0x17 || static_cast<unsigned char>(raw[0]) != 17) return std::nullopt;
    const unsigned length = static_cast<unsigned char>(raw[1]);
    if (length < 0x17 || length > raw.size()) return std::nullopt;
    MemoryDevice d;
    const std::uint16_t size = word(raw, 0x0C);
    if (size == 0x7FFF && length >= 0x20)
        d.size_mib = dword(raw, 0x1C) & 0x7FFFFFFF;
    else if (size != 0xFFFF)
        d.size_mib = (size & 0x8000) ? (size & 0x7FFF) / 1024 : size;  // bit 15: the size is in KiB
    const std::uint16_t width = word(raw, 0x0A);
    d.data_width_bits = width == 0xFFFF ? 0 : width;
    d.type = memory_type_name(static_cast<unsigned char>(raw[0x12]));
    unsigned speed = word(raw, 0x15);
    if (speed == 0xFFFF) speed = length >= 0x58 ? dword(raw, 0x54) : 0;
    if (length >= 0x22) {  // SMBIOS 2.7: the speed the module runs at, which the board may lower
        unsigned configured = word(raw, 0x20);
        if (configured == 0xFFFF) configured = length >= 0x5C ? dword(raw, 0x58) : 0;
        if (configured != 0) speed = configured;
    }
    d.speed_mts = speed;
    return d;
}

std::optional<double> memory_peak_bytes_per_second(const std::vector<MemoryDevice>& devices, std::string& source) {
    double peak = 0;
    // Modules grouped by what they are, for the source text: "4 x DDR5-4800 x 64 bit".
    std::map<std::string, int> kinds;
    for (const MemoryDevice& d : devices) {
        if (d.size_mib == 0 || d.speed_mts == 0 || d.data_width_bits == 0) continue;
        peak += static_cast<double>(d.speed_mts) * 1e6 * d.data_width_bits / 8;
        char kind[64];
        std::snprintf(kind, sizeof kind, "%s-%u x %u bit", d.type.empty() ? "DIMM" : d.type.c_str(), d.speed_mts,
                      d.data_width_bits);
        ++kinds[kind];
    }
    if (peak <= 0) return std::nullopt;
    source.clear();
    for (const auto& [kind, count] : kinds)
        source += (source.empty() ? "" : " + ") + std::to_string(count) + " x " + kind;
    source += " (SMBIOS; one module per channel assumed)";
    return peak;
}

std::optional<double> net_speed_bytes_per_second(std::string_view sysfs_speed) {
    const std::optional<std::uint64_t> mbps = text::parse_u64(sysfs_speed);
    if (!mbps || *mbps == 0 || *mbps > 10'000'000) return std::nullopt;  // -1 is not a u64: no speed
    return static_cast<double>(*mbps) * 1e6 / 8;
}

std::optional<double> sata_link_bytes_per_second(std::string_view sata_spd) {
    std::string_view rest = sata_spd;
    const std::optional<double> gbps = text::take_double(rest);
    if (!gbps || !(*gbps > 0 && *gbps <= 100)) return std::nullopt;  // NaN fails too
    return *gbps * 1e9 * 8 / 10 / 8;
}

}  // namespace baton::measure
