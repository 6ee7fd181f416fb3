// What `baton bench` reads from outside: a net server's request lines (anyone who can reach the port
// sends them), SMBIOS memory records and sysfs link speeds (firmware's bytes), and the sizes, rates,
// --connect targets and scaling sizes users type. A request accepted is within its bounds; a decoded
// memory module has a sane size; a parsed rate or size is positive and finite; a peak is positive.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "measure/bench_math.hpp"
#include "measure/net_bench.hpp"
#include "measure/scaling_bench.hpp"
#include "core/units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace baton;
    using namespace baton::measure;
    const std::string text(reinterpret_cast<const char*>(data), size);
    const NetRequest req = parse_net_request(text);
    if (req.kind == NetRequest::Kind::test &&
        (req.streams < 1 || req.streams > 128 || !(req.seconds > 0 && req.seconds <= 3600) || req.token.size() > 64))
        std::abort();
    if (req.kind == NetRequest::Kind::data && req.token.size() > 64) std::abort();
    if (std::optional<MemoryDevice> d = parse_smbios_memory_device(text)) {
        if (d->size_mib > 0x7FFFFFFF) std::abort();
        std::string source;
        if (std::optional<double> peak = memory_peak_bytes_per_second({*d}, source); peak && !(*peak > 0)) std::abort();
    }
    if (std::optional<double> r = parse_rate(text); r && !(*r >= 1 && *r <= 1e18)) std::abort();
    if (std::optional<std::uint64_t> s = parse_size(text); s && *s == 0) std::abort();
    if (std::optional<double> n = net_speed_bytes_per_second(text); n && !(*n > 0)) std::abort();
    if (std::optional<double> n = sata_link_bytes_per_second(text); n && !(*n > 0 && std::isfinite(*n))) std::abort();
    if (std::optional<unsigned> g = pcie_gen_from_speed(text); g && (*g < 1 || *g > 6)) std::abort();
    if (Result<std::pair<std::string, int>> hp = parse_host_port(text); hp.ok())
        if (hp->first.empty() || hp->second < 1 || hp->second > 65535) std::abort();
    if (Result<std::vector<int>> sizes = parse_sizes(text); sizes.ok())
        for (std::size_t i = 0; i < sizes->size(); ++i)
            if ((*sizes)[i] < 1 || (*sizes)[i] > 1024 || (i > 0 && (*sizes)[i] <= (*sizes)[i - 1])) std::abort();
    return 0;
}
