// The arithmetic of the benches, apart from any measuring so that it is tested on worked
// examples: link peaks (PCIe per generation and width, network and SATA links, memory from the
// DIMMs), nccl-tests' bus bandwidth, weak-scaling efficiency and the verdict of a link.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::measure {

// Bytes per second one PCIe lane carries in one direction at generation `gen` (1..6), after
// the line code: 8b/10b for 1 and 2, 128b/130b for 3 to 5, 242/256 FLIT payload for 6. None for
// an unknown generation.
std::optional<double> pcie_lane_bytes_per_second(unsigned gen);
// A link of `width` lanes: lane rate x width. None for an unknown generation or width 0.
std::optional<double> pcie_link_bytes_per_second(unsigned gen, unsigned width);
// What a PCIe link can carry one way as memory-write and read-completion TLPs of `max_payload`
// bytes: the line rate above x max_payload / (max_payload + the overhead of one TLP). The overhead
// is 24 bytes for generations 1 to 5 (framing, sequence number, a 4-DW header for 64-bit
// addresses, LCRC: PCIe Base Specification 5.0, sections 2.2, 3.6.2, 4.2.2.3) and 16 bytes for 6
// (FLIT mode: framing and CRC are in the flit's 14 bytes, already out of its 242/256; the header
// remains). Flow-control and ACK packets take a little more: judge with a margin (the ok share).
// `derivation` writes the arithmetic out ("16 GT/s x16 x 128/130 x 256/(256+24) = 28.8 GB/s").
struct PcieCeiling {
    double bytes_per_second = 0;
    std::string derivation;
};
std::optional<PcieCeiling> pcie_ceiling(unsigned gen, unsigned width, unsigned max_payload);
unsigned pcie_tlp_overhead_bytes(unsigned gen);
// The Max_Payload_Size a device was set to, from its PCI configuration space (the bytes of
// /sys/bus/pci/devices/ID/config): the PCI Express capability's Device Control register, bits
// 7:5 (128 << value). None when the bytes do not reach it (an unprivileged read gets the first
// 64 bytes only) or hold no PCI Express capability.
std::optional<unsigned> pcie_max_payload_from_config(std::string_view config);
// The generation whose transfer rate sysfs writes as "16.0 GT/s PCIe" (or "8 GT/s"): 1..6, or
// none.
std::optional<unsigned> pcie_gen_from_speed(std::string_view sysfs_speed);

// The collectives of nccl-tests, with its bus-bandwidth factors: busbw = algbw x factor.
enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast };
std::optional<Collective> parse_collective(std::string_view name);
const char* collective_name(Collective c);
// all_reduce 2(n-1)/n; all_gather and reduce_scatter (n-1)/n; broadcast 1.
double bus_factor(Collective c, int ranks);

// One size of a collective, as nccl-tests prints it: `bytes` is its "size" column (the whole
// buffer: for all_gather the gathered output, for reduce_scatter the input), `seconds` the time
// of one operation. GB = 1e9.
struct CollectiveFigures {
    double time_us = 0, algbw_gbps = 0, busbw_gbps = 0;
};
CollectiveFigures collective_figures(Collective c, int ranks, double bytes, double seconds);

// Weak scaling: throughput with n workers over n x the throughput with one.
double weak_scaling_efficiency(double throughput_n, int n, double throughput_1);

// The verdict of a link: "ok" (share >= ok_share), "saturated" (below, and `contention` names
// what else was using the link meanwhile), "degraded" (below, with nothing else seen), or
// "measured" (no peak known, nothing to judge against).
std::string link_verdict(std::optional<double> share, double ok_share, const std::string& contention);
// Against a need instead of a peak: "ok" when measured >= need, else "too_slow".
std::string need_verdict(double measured, double need);

// A memory module as SMBIOS describes it (a type 17 structure).
struct MemoryDevice {
    unsigned size_mib = 0;         // 0: the slot is empty
    unsigned data_width_bits = 0;  // 64 for DDR4/DDR5 DIMMs (without ECC bits)
    unsigned speed_mts = 0;        // the configured speed in MT/s (else the rated one); 0 unknown
    std::string type;              // "DDR4", "DDR5", "LPDDR5", ... ("" unknown)
};
// Decodes one SMBIOS type-17 structure (the raw bytes of /sys/firmware/dmi/entries/17-N/raw);
// none when it is not one or is too short.
std::optional<MemoryDevice> parse_smbios_memory_device(std::string_view raw);
// The theoretical peak of the populated modules: each one's speed x width summed, which holds
// with one module per memory channel (servers built for bandwidth); with two per channel the
// real peak is lower. None when no module has both a speed and a width. `source` says what the
// figure was made of: "4 x DDR5-4800 x 64 bit (SMBIOS)".
std::optional<double> memory_peak_bytes_per_second(const std::vector<MemoryDevice>& devices, std::string& source);

// A network link's speed in bytes per second from /sys/class/net/IF/speed (Mb/s); none for
// -1, 0 or text that is not a number (loopback, virtual interfaces, a link that is down).
std::optional<double> net_speed_bytes_per_second(std::string_view sysfs_speed);
// A SATA link's payload rate from /sys/class/ata_link/linkN/sata_spd ("6.0 Gbps", 8b/10b coded).
std::optional<double> sata_link_bytes_per_second(std::string_view sata_spd);

}  // namespace baton::measure
