// The benches' arithmetic on worked examples: PCIe peaks per generation and width, nccl-tests'
// bus bandwidth for each collective, weak-scaling efficiency, verdicts, and the SMBIOS memory
// devices a memory peak is made of (hostile bytes included).
#include <gtest/gtest.h>

#include <cstring>

#include "measure/bench_math.hpp"

using namespace baton::measure;

TEST(BenchMath, PcieLinkPeaksPerGenerationAndWidth) {
    // Gen 3: 8 GT/s x 128/130 / 8 = 0.985 GB/s a lane; x16 = 15.75 GB/s, the figure vendors print.
    EXPECT_NEAR(*pcie_link_bytes_per_second(3, 16), 15.754e9, 0.01e9);
    // Gen 4 x16: 31.5 GB/s; gen 5 x16 (H100, H200 PCIe): 63.0 GB/s.
    EXPECT_NEAR(*pcie_link_bytes_per_second(4, 16), 31.508e9, 0.01e9);
    EXPECT_NEAR(*pcie_link_bytes_per_second(5, 16), 63.015e9, 0.01e9);
    // Gen 1 and 2 lose a fifth to 8b/10b: 250 and 500 MB/s a lane.
    EXPECT_DOUBLE_EQ(*pcie_lane_bytes_per_second(1), 250e6);
    EXPECT_DOUBLE_EQ(*pcie_link_bytes_per_second(2, 8), 4e9);
    // Gen 6: 64 GT/s PAM4 with FLIT, 242 payload bytes of 256: 121 GB/s at x16.
    EXPECT_NEAR(*pcie_link_bytes_per_second(6, 16), 121e9, 0.01e9);
    // A link that trained at x8 has half the peak of the same generation at x16.
    EXPECT_DOUBLE_EQ(*pcie_link_bytes_per_second(4, 8) * 2, *pcie_link_bytes_per_second(4, 16));
    EXPECT_FALSE(pcie_link_bytes_per_second(0, 16));
    EXPECT_FALSE(pcie_link_bytes_per_second(7, 16));
    EXPECT_FALSE(pcie_link_bytes_per_second(4, 0));
    EXPECT_FALSE(pcie_link_bytes_per_second(4, 64));
}

// The protocol's ceiling: the line rate x payload / (payload + a TLP's overhead). A healthy Gen4 x16
// host moves about 80 % of the raw 32 GB/s (25-26 GB/s), which is 89 % of this ceiling: ok at 85 %.
TEST(BenchMath, PcieCeilingsFromTheLineCodeAndTheTlpOverhead) {
    EXPECT_EQ(pcie_tlp_overhead_bytes(4), 24u);
    EXPECT_EQ(pcie_tlp_overhead_bytes(6), 16u);
    const auto gen4 = pcie_ceiling(4, 16, 256);
    ASSERT_TRUE(gen4);
    EXPECT_NEAR(gen4->bytes_per_second, 31.508e9 * 256 / 280, 0.01e9);  // 28.8 GB/s
    EXPECT_EQ(gen4->derivation, "16 GT/s x 16 lanes / 8 x 128/130 x 256/(256+24) = 28.8 GB/s");
    EXPECT_GE(25.6e9 / gen4->bytes_per_second, 0.85);
    EXPECT_LT(25.6e9 / *pcie_link_bytes_per_second(4, 16), 0.85) << "the raw rate would call it degraded";
    EXPECT_NEAR(pcie_ceiling(5, 16, 256)->bytes_per_second, 63.015e9 * 256 / 280, 0.01e9);  // 57.6 GB/s
    EXPECT_NEAR(pcie_ceiling(3, 16, 128)->bytes_per_second, 15.754e9 * 128 / 152, 0.01e9);  // 13.3 GB/s
    EXPECT_NEAR(pcie_ceiling(6, 16, 256)->bytes_per_second, 121.0e9 * 256 / 272, 0.01e9);   // FLIT mode
    EXPECT_EQ(pcie_ceiling(1, 1, 128)->derivation, "2.5 GT/s x 1 lanes / 8 x 8/10 x 128/(128+24) = 0.2 GB/s");
    EXPECT_FALSE(pcie_ceiling(7, 16, 256));
    EXPECT_FALSE(pcie_ceiling(4, 0, 256));
    EXPECT_FALSE(pcie_ceiling(4, 16, 0));
}

// Max_Payload_Size from config space bytes: the capability list walked to the PCI Express one;
// short reads (an unprivileged read of sysfs' config gets 64 bytes), no list, loops and reserved codes
// give none.
TEST(BenchMath, MaxPayloadFromTheConfigSpace) {
    std::string c(256, '\0');
    c[0x06] = 0x10;                  // status: a capability list
    c[0x34] = 0x50;                  // the first capability
    c[0x50] = 0x01, c[0x51] = 0x60;  // power management, then
    c[0x60] = 0x10, c[0x61] = 0x00;  // PCI Express
    for (unsigned code = 0; code <= 5; ++code) {
        c[0x68] = static_cast<char>(code << 5 | 0x0f);  // the other bits of Device Control set too
        EXPECT_EQ(pcie_max_payload_from_config(c), 128u << code) << code;
    }
    c[0x68] = static_cast<char>(6 << 5);
    EXPECT_FALSE(pcie_max_payload_from_config(c)) << "a reserved code";
    c[0x68] = static_cast<char>(1 << 5);
    EXPECT_FALSE(pcie_max_payload_from_config(c.substr(0, 64))) << "an unprivileged read";
    EXPECT_FALSE(pcie_max_payload_from_config(""));
    std::string no_list = c;
    no_list[0x06] = 0;
    EXPECT_FALSE(pcie_max_payload_from_config(no_list));
    std::string loop = c;
    loop[0x51] = 0x50;  // points at itself, never reaching PCI Express
    EXPECT_FALSE(pcie_max_payload_from_config(loop));
    std::string below = c;
    below[0x34] = 0x10;  // into the header: not a capability
    EXPECT_FALSE(pcie_max_payload_from_config(below));
    for (unsigned seed = 0; seed < 2000; ++seed) {  // hostile bytes never read out of bounds
        std::string r(seed % 300, '\0');
        for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<char>((seed * 2654435761u + i * 40503u) >> 7);
        (void)pcie_max_payload_from_config(r);
    }
}

TEST(BenchMath, PcieGenerationFromSysfsSpeed) {
    EXPECT_EQ(pcie_gen_from_speed("16.0 GT/s PCIe"), 4u);
    EXPECT_EQ(pcie_gen_from_speed("8 GT/s"), 3u);
    EXPECT_EQ(pcie_gen_from_speed("2.5 GT/s PCIe\n"), 1u);
    EXPECT_EQ(pcie_gen_from_speed("32.0 GT/s PCIe"), 5u);
    for (const char* bad : {"", "Unknown", "12 GT/s", "GT/s", "-8 GT/s"}) EXPECT_FALSE(pcie_gen_from_speed(bad)) << bad;
}

TEST(BenchMath, BusBandwidthAsNcclTestsComputesIt) {
    // nccl-tests doc/PERFORMANCE.md: all_reduce busbw = algbw x 2(n-1)/n.
    EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 8), 1.75);
    EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 2), 1.0);
    EXPECT_DOUBLE_EQ(bus_factor(Collective::all_gather, 4), 0.75);
    EXPECT_DOUBLE_EQ(bus_factor(Collective::reduce_scatter, 8), 0.875);
    EXPECT_DOUBLE_EQ(bus_factor(Collective::broadcast, 8), 1.0);
    EXPECT_DOUBLE_EQ(bus_factor(Collective::all_reduce, 1), 0.0);  // one rank moves nothing over a bus
    // 1 GiB all_reduce over 8 GPUs in 4.5 ms: algbw 238.6 GB/s, busbw 417.6 GB/s.
    const CollectiveFigures f = collective_figures(Collective::all_reduce, 8, 1073741824.0, 4.5e-3);
    EXPECT_NEAR(f.time_us, 4500, 1e-6);
    EXPECT_NEAR(f.algbw_gbps, 238.609, 0.001);
    EXPECT_NEAR(f.busbw_gbps, 417.566, 0.001);
    // 128 MB all_gather over 4 ranks in 2 ms: algbw 64, busbw 48.
    const CollectiveFigures g = collective_figures(Collective::all_gather, 4, 128e6, 2e-3);
    EXPECT_DOUBLE_EQ(g.algbw_gbps, 64);
    EXPECT_DOUBLE_EQ(g.busbw_gbps, 48);
    EXPECT_EQ(collective_figures(Collective::broadcast, 2, 1e6, 0).busbw_gbps, 0);  // no time: no figure
    EXPECT_EQ(parse_collective("reduce_scatter"), Collective::reduce_scatter);
    EXPECT_FALSE(parse_collective("allreduce"));
    EXPECT_STREQ(collective_name(Collective::all_gather), "all_gather");
}

TEST(BenchMath, WeakScalingEfficiency) {
    // 1 GPU: 1000 samples/s; 4 GPUs: 3600 samples/s -> 0.9.
    EXPECT_DOUBLE_EQ(weak_scaling_efficiency(3600, 4, 1000), 0.9);
    EXPECT_DOUBLE_EQ(weak_scaling_efficiency(1000, 1, 1000), 1.0);
    EXPECT_DOUBLE_EQ(weak_scaling_efficiency(1500, 2, 0), 0.0);
}

TEST(BenchMath, Verdicts) {
    EXPECT_EQ(link_verdict(0.91, 0.85, ""), "ok");
    EXPECT_EQ(link_verdict(0.85, 0.85, ""), "ok");
    EXPECT_EQ(link_verdict(0.60, 0.85, ""), "degraded");
    EXPECT_EQ(link_verdict(0.60, 0.85, "pid 7 (cp) read 1 GB/s"), "saturated");
    EXPECT_EQ(link_verdict(std::nullopt, 0.85, "x"), "measured");
    EXPECT_EQ(need_verdict(2.1e9, 2e9), "ok");
    EXPECT_EQ(need_verdict(1.9e9, 2e9), "too_slow");
}

namespace {

// A type-17 structure as SMBIOS 3.3 lays it out (0x5C bytes), with the figures given.
std::string dimm(unsigned size_mib, unsigned width, unsigned type, unsigned speed, unsigned configured) {
    std::string raw(0x5C, '\0');
    raw[0] = 17;
    raw[1] = 0x5C;
    auto put16 = [&](std::size_t at, unsigned v) {
        raw[at] = static_cast<char>(v & 0xFF);
        raw[at + 1] = static_cast<char>((v >> 8) & 0xFF);
    };
    put16(0x08, width + 8);  // total width includes ECC bits
    put16(0x0A, width);
    put16(0x0C, size_mib);
    raw[0x12] = static_cast<char>(type);
    put16(0x15, speed);
    put16(0x20, configured);
    return raw + std::string("DIMM_A1\0\0", 9);  // the strings that follow a structure
}

}  // namespace

TEST(BenchMath, SmbiosMemoryDevicesAndTheirPeak) {
    // 16 GiB; 32 GiB and more take the extended size (below), since bit 15 means "in KiB".
    std::optional<MemoryDevice> d = parse_smbios_memory_device(dimm(16384, 64, 0x22, 5600, 4800));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->size_mib, 16384u);
    EXPECT_EQ(d->data_width_bits, 64u);
    EXPECT_EQ(d->type, "DDR5");
    EXPECT_EQ(d->speed_mts, 4800u) << "the configured speed wins over the rated one";
    // Eight DDR5-4800 DIMMs, one per channel: 8 x 4800e6 x 8 bytes = 307.2 GB/s. An empty slot adds nothing.
    std::vector<MemoryDevice> all(8, *d);
    all.push_back(*parse_smbios_memory_device(dimm(0, 64, 0x22, 0, 0)));
    std::string source;
    const std::optional<double> peak = memory_peak_bytes_per_second(all, source);
    ASSERT_TRUE(peak);
    EXPECT_DOUBLE_EQ(*peak, 307.2e9);
    EXPECT_EQ(source, "8 x DDR5-4800 x 64 bit (SMBIOS; one module per channel assumed)");
    // Extended size (0x7FFF) and speed in the 32-bit fields (0xFFFF).
    std::string big = dimm(0x7FFF, 64, 0x1A, 0xFFFF, 0);
    const std::uint32_t ext_size = 262144, ext_speed = 70000;
    std::memcpy(big.data() + 0x1C, &ext_size, 4);
    std::memcpy(big.data() + 0x54, &ext_speed, 4);
    d = parse_smbios_memory_device(big);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->size_mib, 262144u);
    EXPECT_EQ(d->speed_mts, 70000u);
    EXPECT_EQ(d->type, "DDR4");
    // Nothing known: no peak.
    EXPECT_FALSE(memory_peak_bytes_per_second({}, source));
    EXPECT_FALSE(memory_peak_bytes_per_second({MemoryDevice{1024, 64, 0, ""}}, source));
}

TEST(BenchMath, HostileSmbiosBytesAreRefused) {
    EXPECT_FALSE(parse_smbios_memory_device(""));
    EXPECT_FALSE(parse_smbios_memory_device(std::string(0x5C, '\0')));  // type 0
    const std::optional<MemoryDevice> kib = parse_smbios_memory_device(dimm(0x8000 | 512, 64, 0x22, 4800, 0));
    ASSERT_TRUE(kib);
    EXPECT_EQ(kib->size_mib, 0u) << "512 KiB: bit 15 of the size means KiB";
    std::string shortened = dimm(1024, 64, 0x22, 4800, 0);
    shortened[1] = 0x10;  // a length below the fields read
    EXPECT_FALSE(parse_smbios_memory_device(shortened));
    std::string overlong = dimm(1024, 64, 0x22, 4800, 0);
    overlong[1] = static_cast<char>(0xFF);  // claims more bytes than there are
    EXPECT_FALSE(parse_smbios_memory_device(overlong.substr(0, 0x60)));
    // An SMBIOS 2.3 structure (0x17 bytes) has no configured speed: the rated one counts.
    std::string old = dimm(1024, 64, 0x18, 1600, 1333).substr(0, 0x17);
    old[1] = 0x17;
    const std::optional<MemoryDevice> d = parse_smbios_memory_device(old);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->speed_mts, 1600u);
}

TEST(BenchMath, NetworkAndSataLinkRates) {
    EXPECT_DOUBLE_EQ(*net_speed_bytes_per_second("25000\n"), 3.125e9);  // 25 GbE
    EXPECT_DOUBLE_EQ(*net_speed_bytes_per_second("100000"), 12.5e9);
    for (const char* none : {"-1", "0", "", "fast", "99999999999"})
        EXPECT_FALSE(net_speed_bytes_per_second(none)) << none;
    EXPECT_DOUBLE_EQ(*sata_link_bytes_per_second("6.0 Gbps"), 600e6);
    EXPECT_DOUBLE_EQ(*sata_link_bytes_per_second("3.0 Gbps\n"), 300e6);
    EXPECT_FALSE(sata_link_bytes_per_second("<unknown>"));
    EXPECT_FALSE(sata_link_bytes_per_second("NAN Gbps")) << "found by fuzz_bench_inputs";
    EXPECT_FALSE(pcie_gen_from_speed("nan GT/s"));
}
