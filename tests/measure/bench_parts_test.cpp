// The benches' parts that need no measuring: the disk and its link found in a sysfs tree (NVMe,
// SATA, a partition, a virtual disk), --connect's HOST[:PORT], what else ran meanwhile from a
// snapshot, the report as text and JSON, and a bench's record in the history.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sched.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "measure/bench_math.hpp"
#include "measure/bench_report.hpp"
#include "measure/contention.hpp"
#include "measure/disk_bench.hpp"
#include "measure/memory_bench.hpp"
#include "measure/net_bench.hpp"
#include "store/history.hpp"
#include "store/history_runs.hpp"
#include "store/history_bench.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::store;
using namespace baton::measure;
using baton::test::TempDir;

namespace {

namespace fs = std::filesystem;

// A sysfs tree: an NVMe drive behind a PCIe 4.0 x4 link with one partition, a SATA disk on a
// 6 Gbps link, and a virtio disk with no link.
void make_sysfs(const TempDir& d) {
    const std::string pci = "devices/pci0000:00/0000:00:1d.0/0000:3d:00.0";
    d.write(pci + "/current_link_speed", "16.0 GT/s PCIe\n");
    d.write(pci + "/current_link_width", "4\n");
    d.write(pci + "/nvme/nvme0/nvme0n1/size", "1\n");
    d.write(pci + "/nvme/nvme0/nvme0n1/nvme0n1p1/partition", "1\n");
    d.write("devices/pci0000:00/0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block/sda/size", "1\n");
    d.write("class/ata_link/link3/sata_spd", "6.0 Gbps\n");
    d.write("devices/pci0000:00/0000:00:05.0/virtio1/block/vda/size", "1\n");
    fs::create_directories(d.path() + "/block");
    fs::create_directories(d.path() + "/dev/block");
    fs::create_directory_symlink(d.path() + "/" + pci + "/nvme/nvme0/nvme0n1", d.path() + "/block/nvme0n1");
    fs::create_directory_symlink(d.path() + "/devices/pci0000:00/0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block/sda",
                                 d.path() + "/block/sda");
    fs::create_directory_symlink(d.path() + "/devices/pci0000:00/0000:00:05.0/virtio1/block/vda",
                                 d.path() + "/block/vda");
    fs::create_directory_symlink(d.path() + "/" + pci + "/nvme/nvme0/nvme0n1/nvme0n1p1", d.path() + "/dev/block/259:1");
    fs::create_directory_symlink(d.path() + "/" + pci + "/nvme/nvme0/nvme0n1", d.path() + "/dev/block/259:0");
    fs::create_directory_symlink(d.path() + "/devices/pci0000:00/0000:00:05.0/virtio1/block/vda",
                                 d.path() + "/dev/block/254:0");
}

}  // namespace

TEST(BenchParts, TheDiskOfAPathAndItsLink) {
    TempDir d;
    make_sysfs(d);
    EXPECT_EQ(disk_of_device(d.path(), 259, 1), "nvme0n1") << "a partition is measured as its whole disk";
    EXPECT_EQ(disk_of_device(d.path(), 259, 0), "nvme0n1");
    EXPECT_EQ(disk_of_device(d.path(), 254, 0), "vda");
    EXPECT_EQ(disk_of_device(d.path(), 8, 99), "") << "a device sysfs does not know";
    std::string source;
    EXPECT_NEAR(*disk_link_peak(d.path(), "nvme0n1", source), 7.877e9, 0.001e9);
    EXPECT_NE(source.find("PCIe 4.0 x4"), std::string::npos) << source;
    EXPECT_DOUBLE_EQ(*disk_link_peak(d.path(), "sda", source), 600e6);
    EXPECT_NE(source.find("SATA 6.0 Gbps"), std::string::npos) << source;
    EXPECT_FALSE(disk_link_peak(d.path(), "vda", source)) << "a virtual disk has no link rate";
    EXPECT_FALSE(disk_link_peak(d.path(), "", source));
    EXPECT_FALSE(disk_link_peak(d.path(), "../../etc", source));
}

TEST(BenchParts, ConnectTargets) {
    EXPECT_EQ(*parse_host_port("node2"), (std::pair<std::string, int>{"node2", kNetDefaultPort}));
    EXPECT_EQ(*parse_host_port("10.0.0.2:7000"), (std::pair<std::string, int>{"10.0.0.2", 7000}));
    EXPECT_EQ(*parse_host_port("[::1]:7000"), (std::pair<std::string, int>{"::1", 7000}));
    EXPECT_EQ(*parse_host_port("[fe80::1]"), (std::pair<std::string, int>{"fe80::1", kNetDefaultPort}));
    EXPECT_EQ(*parse_host_port("fe80::1"), (std::pair<std::string, int>{"fe80::1", kNetDefaultPort}));
    for (const char* bad : {"", ":7000", "host:", "host:0", "host:65536", "host:x", "[::1", "[::1]x", "[::1]:"})
        EXPECT_FALSE(parse_host_port(bad).ok()) << bad;
}

TEST(BenchParts, WhatElseRanMeanwhile) {
    Snapshot s;
    ProcessInfo self, stress, idle;
    self.pid = 10;
    self.name = "baton";
    self.cpu_percent = 200;
    stress.pid = 20;
    stress.name = "stress-ng";
    stress.cpu_percent = 150;
    stress.read_bytes_per_second = 300e6;
    idle.pid = 30;
    idle.name = "sshd";
    idle.cpu_percent = 1;
    s.processes = {self, stress, idle};
    EXPECT_NE(cpu_contention(s, 10).find("pid 20 (stress-ng) 150 %"), std::string::npos) << cpu_contention(s, 10);
    s.processes[1].cpu_percent = 20;
    EXPECT_EQ(cpu_contention(s, 10), "") << "others under half a core: nothing to name";

    DiskStats disk;
    disk.name = "nvme0n1";
    disk.read_bytes_per_second = 1.3e9;
    s.disks = {disk};
    const std::string d = disk_contention(s, "nvme0n1", 1e9, 10);
    EXPECT_NE(d.find("other reads of nvme0n1 at 300 MB/s"), std::string::npos) << d;
    EXPECT_NE(d.find("pid 20 (stress-ng)"), std::string::npos) << d;
    EXPECT_EQ(disk_contention(s, "nvme0n1", 1.25e9, 10), "") << "within a tenth of the bench's own reads";
    EXPECT_EQ(disk_contention(s, "sda", 1e9, 10), "");

    NetworkStats net;
    net.name = "eth0";
    net.rx_bytes_per_second = 0.1e9;
    net.tx_bytes_per_second = 1.6e9;
    s.networks = {net};
    EXPECT_NE(net_contention(s, "eth0", 1.0e9).find("600 MB/s"), std::string::npos);
    EXPECT_EQ(net_contention(s, "eth0", 1.55e9), "");

    GpuInfo g;
    g.index = 1;
    GpuProcess other;
    other.pid = 20;
    g.processes = {other};
    s.gpus = {g};
    EXPECT_EQ(gpu_contention(s, 1, 10), "pid 20 (stress-ng) was using GPU 1 meanwhile");
    EXPECT_EQ(gpu_contention(s, 1, 20), "") << "the bench's own process is not contention";
    EXPECT_EQ(gpu_contention(s, 0, 10), "");
}

TEST(BenchParts, ReportAsTextAndJson) {
    BenchReport r;
    r.bench = "h2d";
    r.notes = {"GPU 0: NVIDIA H200"};
    Table t;
    t.title = "copies (GB/s)";
    t.keys = {"size_bytes", "h2d_pinned_bytes_per_second"};
    t.headers = {"size", "h2d pinned"};
    t.rows.push_back({number_cell(1 << 30, "1 GiB"), number_cell(55.1e9, "55.1")});
    r.tables.push_back(t);
    LinkResult ok{"h2d gpu0 pinned", 55.1e9, 63.015e9, "PCIe 5.0 x16 (NVML)", std::nullopt, "ok", "", 0.85};
    LinkResult slow{"h2d gpu1 pinned", 20e9, 63.015e9, "PCIe 5.0 x16 (NVML)", std::nullopt, "degraded", "", 0.85};
    r.links = {ok, slow};
    const std::string text = report_text(r);
    EXPECT_NE(text.find("GPU 0: NVIDIA H200"), std::string::npos) << text;
    EXPECT_NE(text.find("  1 GiB        55.1"), std::string::npos) << text;
    EXPECT_NE(text.find("h2d gpu0 pinned: 55.1 GB/s, 87 % of 63.0 GB/s (PCIe 5.0 x16 (NVML)): ok"), std::string::npos)
        << text;
    const nlohmann::json j = nlohmann::json::parse(report_json(r));
    EXPECT_EQ(j["bench"], "h2d");
    EXPECT_EQ(j["tables"][0]["rows"][0]["size_bytes"], 1073741824);
    EXPECT_DOUBLE_EQ(j["links"][0]["share"].get<double>(), 0.874);
    EXPECT_EQ(j["links"][1]["verdict"], "degraded");
    const std::string summary = summary_text({r});
    EXPECT_NE(summary.find("h2d gpu1 pinned: below 85 % of its peak with nothing else running; baton bench h2d"),
              std::string::npos)
        << summary;
    const nlohmann::json sj = nlohmann::json::parse(summary_json({r}));
    EXPECT_EQ(sj["benches"].size(), 1u);
    EXPECT_EQ(sj["next"].size(), 1u);
    // Links with the same trouble and cause make one line.
    LinkResult busy{"h2d gpu2 pinned", 9e9,         63.015e9,    "PCIe 5.0 x16 (NVML)",
                    std::nullopt,      "saturated", "pid 7 (x)", 0.85};
    LinkResult busy_back = busy;
    busy_back.link = "d2h gpu2 pinned";
    r.links = {busy, busy_back};
    const nlohmann::json grouped = nlohmann::json::parse(summary_json({r}));
    ASSERT_EQ(grouped["next"].size(), 1u);
    EXPECT_EQ(grouped["next"][0].get<std::string>().rfind("h2d gpu2 pinned, d2h gpu2 pinned: something else", 0), 0u)
        << grouped["next"][0];
}

TEST(BenchParts, ABenchIsARunOfKindBenchWithItsLinks) {
    TempDir d;
    const std::string db = d.path() + "/baton.db";
    Result<History> h = History::open(db);
    ASSERT_TRUE(h.ok()) << h.error().message;
    const std::vector<BenchLinkRecord> links = {
        {"memory", "memory triad", 18.2e9, 25.6e9, std::nullopt, "4 x DDR4-3200 x 64 bit", "ok", ""},
        {"disk", "disk seq cold", 1.9e9, std::nullopt, 2e9, "", "too_slow", ""},
        {"scaling", "scaling 2 GPUs", 1800, 2000, std::nullopt, "2 x 1 GPU", "ok", "", "samples/s"}};
    Result<std::int64_t> id =
        h->bench_table().record_bench("bench", "baton bench", "/tmp", "box", 1000, 61000, "REPORT", links);
    ASSERT_TRUE(id.ok()) << id.error().message;
    Result<RunRecord> r = h->run_reads().run(*id);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->kind, RunKind::bench);
    EXPECT_EQ(r->state, RunState::finished);
    EXPECT_EQ(r->summary, "REPORT");
    EXPECT_EQ(r->exit_status, 0);
    Result<std::vector<BenchLinkRecord>> back = h->bench_table().bench_links(*id);
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(back->size(), 3u);
    EXPECT_EQ((*back)[0].unit, "B/s");
    EXPECT_EQ((*back)[2].unit, "samples/s");
    EXPECT_EQ((*back)[0].link, "memory triad");
    EXPECT_EQ((*back)[0].peak, 25.6e9);
    EXPECT_FALSE((*back)[1].peak);
    EXPECT_EQ((*back)[1].need, 2e9);
    EXPECT_EQ((*back)[1].verdict, "too_slow");
    // Pruned like any run: its links go with it.
    EXPECT_EQ(*h->run_reads().prune(1000000), 1);
    EXPECT_TRUE(h->bench_table().bench_links(*id)->empty());
    // A run of baton run is of kind "run".
    Result<std::int64_t> run = h->run_writes().begin_run("train", "python train.py", "/tmp", "box", 2000);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(h->run_reads().run(*run)->kind, RunKind::run);
}

TEST(BenchParts, MemoryBenchPerNumaNodeAgainstTheDimmsPeak) {
    // The first two CPUs this test may run on (CI's machine has two; a one-CPU box cannot have two nodes).
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
            if (CPU_ISSET(c, &set)) cpus.push_back(c);
    ASSERT_EQ(cpus.size(), 2u) << "two NUMA nodes of one CPU each need two CPUs";
    // Two NUMA nodes of one CPU each, and two DDR5-4800 DIMMs in SMBIOS: 2 x 4800e6 x 8 B = 76.8 GB/s.
    TempDir d;
    d.write("devices/system/node/node0/cpulist", std::to_string(cpus[0]) + "\n");
    d.write("devices/system/node/node1/cpulist", std::to_string(cpus[1]) + "\n");
    d.write("devices/system/node/possible", "0-1\n");  // not a node: ignored
    std::string raw(0x5C, '\0');
    raw[0] = 17;
    raw[1] = 0x5C;
    raw[0x0A] = 64;                                                                        // data width
    raw[0x0C] = 0x00, raw[0x0D] = 0x40;                                                    // 16384 MiB
    raw[0x12] = 0x22;                                                                      // DDR5
    raw[0x20] = static_cast<char>(4800 & 0xFF), raw[0x21] = static_cast<char>(4800 >> 8);  // configured speed
    d.write("firmware/dmi/entries/17-0/raw", raw);
    d.write("firmware/dmi/entries/17-1/raw", raw);
    d.write("firmware/dmi/entries/16-0/raw", raw);  // another type's directory: not a module
    MemoryBenchOptions o;
    o.sys_root = d.path();
    o.array_bytes = 1 << 20;
    o.repeats = 1;
    o.sampler.processes = false;
    o.sampler.gpus = false;
    const BenchReport r = run_memory_bench(o);
    ASSERT_EQ(r.tables.size(), 2u) << "the threads table and the NUMA table";
    ASSERT_EQ(r.tables[1].rows.size(), 2u);
    EXPECT_EQ(r.tables[1].rows[0][0].value, 0);
    EXPECT_EQ(r.tables[1].rows[1][0].value, 1);
    ASSERT_EQ(r.links.size(), 2u);
    for (const LinkResult& l : r.links) {
        ASSERT_TRUE(l.peak) << l.peak_source;
        EXPECT_DOUBLE_EQ(*l.peak, 76.8e9);
        EXPECT_EQ(l.peak_source, "2 x DDR5-4800 x 64 bit (SMBIOS; one module per channel assumed)");
        EXPECT_GT(l.measured, 1e8);
        EXPECT_EQ(l.verdict, link_verdict(l.share(), 0.6, l.detail)) << l.verdict;
    }
}
