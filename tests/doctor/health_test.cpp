// baton doctor --health on synthetic facts, and the kernel log's XID lines in every format a node
// keeps them (/dev/kmsg records, dmesg, journalctl, kern.log), hostile lines included.
#include <gtest/gtest.h>

#include "doctor/health.hpp"
#include "doctor/kernel_xids.hpp"
#include "report/doctor_view.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::doctor;

namespace {

GpuInfo gpu(unsigned index, const std::string& bus) {
    GpuInfo g;
    g.index = index;
    g.uuid = "GPU-" + std::to_string(index) + "aaaaaaa-0000-4000-8000-000000000000";
    g.pci_bus_id = bus;
    g.ecc_uncorrected_volatile = 0;
    g.remapping_pending = false;
    g.remapping_failed = false;
    g.pcie_generation = 5;
    g.pcie_generation_max = 5;
    g.pcie_width = 16;
    g.pcie_width_max = 16;
    g.utilization_percent = 95;
    return g;
}

HealthFacts healthy() {
    HealthFacts f;
    f.snapshot.gpu_status = "ok";
    f.snapshot.gpu_state = GpuState::ok;
    f.snapshot.gpu_driver_version = "550.54.15";
    f.snapshot.gpus = {gpu(0, "00000000:18:00.0"), gpu(1, "00000000:3B:00.0")};
    f.boot_unix_seconds = 1764400000;
    return f;
}

std::vector<CheckItem> failing(const std::vector<CheckItem>& items) {
    std::vector<CheckItem> out;
    for (const CheckItem& i : items)
        if (i.status == CheckStatus::fail) out.push_back(i);
    return out;
}

const CheckItem* find(const std::vector<CheckItem>& items, const std::string& id) {
    for (const CheckItem& i : items)
        if (i.id == id) return &i;
    return nullptr;
}

}  // namespace

TEST(KernelXids, EveryFormatANodeKeepsThemIn) {
    const auto x = parse_kernel_xids(
        "4,1021,5678901234,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
        "the bus.\n"
        " SUBSYSTEM=pci\n"
        "[ 5678.901234] NVRM: Xid (PCI:0000:18:00): 48, pid=1234, name=python, An uncorrectable double bit error\n"
        "Dec  5 07:03:44 node1 kernel: NVRM: Xid (0000:18:00): 13, Graphics Exception: ESR 0x405840=0x1\n"
        "Dec  5 07:03:45 node1 kernel: [ 77.5] NVRM: Xid (PCI:00000001:AF:00): 94, Contained: SM (0x1)\n"
        "6,1022,5678901300,-;NVRM: GPU at PCI:0000:3b:00: GPU-1aaaaaaa-0000-4000-8000-000000000000\n");
    ASSERT_EQ(x.size(), 4u);
    EXPECT_EQ(x[0].pci, "0000:3b:00");
    EXPECT_EQ(x[0].xid, 79u);
    ASSERT_TRUE(x[0].seconds_since_boot);
    EXPECT_DOUBLE_EQ(*x[0].seconds_since_boot, 5678.901234);
    EXPECT_EQ(x[0].message, "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.");
    EXPECT_EQ(x[1].xid, 48u);
    EXPECT_DOUBLE_EQ(*x[1].seconds_since_boot, 5678.901234);
    EXPECT_EQ(x[2].pci, "0000:18:00");
    EXPECT_EQ(x[2].xid, 13u);
    EXPECT_FALSE(x[2].seconds_since_boot);  // a syslog time is no time since boot
    EXPECT_EQ(x[3].pci, "0001:af:00");      // an 8-digit domain, upper case
    EXPECT_DOUBLE_EQ(*x[3].seconds_since_boot, 77.5);
    EXPECT_EQ(kernel_pci_name("00000000:3B:00.0"), "0000:3b:00");
    EXPECT_EQ(kernel_pci_name("0000:3b:00.0"), "0000:3b:00");
}

TEST(KernelXids, HostileLinesAreSkipped) {
    const auto x = parse_kernel_xids(
        "NVRM: Xid (PCI:0000:3b:00): 79\n"                              // no comma after the number: still one
        "NVRM: Xid (PCI:0000:3b:00): , nothing\n"                       // no number
        "NVRM: Xid (PCI:0000:3b:00): 99999999999, too long\n"           // out of range
        "NVRM: Xid (PCI:zz00:3b:00): 79, not hex\n"                     // not an address
        "NVRM: Xid (PCI:0000:3b:00:00:00): 79, too many parts\n"        //
        "NVRM: Xid (PCI:0000:3b:00: 79, unclosed\n"                     //
        "NVRM: Xid (\n"                                                 //
        "[ -5.0] NVRM: Xid (PCI:0000:3b:00): 31, \x01\x7f\xff fault\n"  // a negative time, control bytes
        + std::string(100000, 'x') + "\n");
    ASSERT_EQ(x.size(), 2u);
    EXPECT_EQ(x[0].xid, 79u);
    EXPECT_EQ(x[0].message, "");
    EXPECT_EQ(x[1].xid, 31u);
    EXPECT_FALSE(x[1].seconds_since_boot);
    EXPECT_EQ(x[1].message, "??? fault");
    // A message is kept to 200 bytes.
    EXPECT_EQ(parse_kernel_xids("NVRM: Xid (PCI:0000:3b:00): 31, " + std::string(1000, 'm'))[0].message.size(), 200u);
}

TEST(KernelXids, AFileThatCannotBeReadIsAClearError) {
    auto r = read_kernel_xids("/nonexistent/kern.log");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("cannot read the kernel log /nonexistent/kern.log"), std::string::npos)
        << r.error().message;
    test::TempDir d;
    d.write("kern.log", "Dec  5 07:03:44 node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n");
    r = read_kernel_xids(d.path() + "/kern.log");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size(), 1u);
}

TEST(Health, AHealthyNodePassesEveryCheck) {
    const auto items = health_checks(healthy());
    EXPECT_TRUE(failing(items).empty());
    std::vector<std::string> ids;
    for (const CheckItem& i : items) ids.push_back(i.id);
    EXPECT_EQ(ids, health_check_ids());
    std::string text;
    report::append_health_text(items, 2, text);
    EXPECT_EQ(text, "healthy: 2 GPUs; passed nvml, gpu_lost, xid, ecc, row_remap, pcie_link\n");
    EXPECT_EQ(report::doctor_exit_status(items), 0);
}

TEST(Health, XidsThatAskForADrainOrAResetFailTheNode) {
    HealthFacts f = healthy();
    f.kernel_xids = parse_kernel_xids(
        "[  100.5] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
        "[  200.0] NVRM: Xid (PCI:0000:18:00): 13, Graphics Exception\n"
        "[  201.0] NVRM: Xid (PCI:0000:18:00): 13, Graphics Exception\n"
        "[  300.0] NVRM: Xid (PCI:0000:18:00): 94, Contained\n"
        "[  400.0] NVRM: Xid (PCI:0000:99:00): 48, on a GPU NVML no longer lists\n");
    const auto items = health_checks(f);
    const auto bad = failing(items);
    ASSERT_EQ(bad.size(), 3u);
    EXPECT_EQ(bad[0].id, "xid");
    EXPECT_EQ(
        bad[0].detail,
        "GPU0 (00000000:18:00.0): XID 94 (Contained ECC error) at 2025-11-29T07:11:40Z; the jobs' own faults: XID "
        "13 x2")
        << "the jobs' own faults on the failing GPU are in its line";
    EXPECT_NE(bad[0].fix.find("nvidia-smi -r -i 0"), std::string::npos);
    EXPECT_EQ(bad[1].detail, "GPU1 (00000000:3B:00.0): XID 79 (GPU has fallen off the bus) at 2025-11-29T07:08:20Z");
    EXPECT_NE(bad[1].fix.find("Drain"), std::string::npos);
    EXPECT_NE(bad[1].fix.find("dmesg -C"), std::string::npos);
    EXPECT_EQ(bad[2].detail.rfind("the GPU at PCI 0000:99:00: XID 48 (Double Bit ECC Error)", 0), 0u) << bad[2].detail;
    std::string text;
    report::append_health_text(items, 2, text);
    EXPECT_EQ(text.rfind("FAIL xid: GPU0 (00000000:18:00.0): XID 94", 0), 0u) << text;
    EXPECT_EQ(report::doctor_exit_status(items), 1);
    // Only the jobs' own faults: healthy, and said so.
    f.kernel_xids = parse_kernel_xids("NVRM: Xid (PCI:0000:18:00): 13, x\nNVRM: Xid (PCI:0000:18:00): 31, y\n");
    const auto ok = health_checks(f);
    EXPECT_TRUE(failing(ok).empty());
    EXPECT_EQ(find(ok, "xid")->detail,
              "none that asks for a reset or a drain; the jobs' own faults: GPU0 (00000000:18:00.0) XID 13 x1, GPU0 "
              "(00000000:18:00.0) XID 31 x1");
    std::string said;
    report::append_health_text(ok, 2, said);
    EXPECT_NE(
        said.find("\nok xid: none that asks for a reset or a drain; the jobs' own faults: GPU0 (00000000:18:00.0) "
                  "XID 13 x1"),
        std::string::npos)
        << "the text lists them, as its docs say:\n"
        << said;
    // An unreadable kernel log: skipped, said, and not a failure by itself.
    f.kernel_xids.clear();
    f.kernel_log_error = "cannot read the kernel log (/dev/kmsg: Operation not permitted): run as root";
    const auto skipped = health_checks(f);
    EXPECT_EQ(find(skipped, "xid")->status, CheckStatus::skip);
    std::string t;
    report::append_health_text(skipped, 2, t);
    EXPECT_NE(t.find("\nskip xid: cannot read the kernel log"), std::string::npos) << t;
}

TEST(Health, LostGpusEccRowRemapsAndLinks) {
    HealthFacts f = healthy();
    f.snapshot.gpus[1].lost = true;
    f.snapshot.gpus[1].error = "GPU is lost";
    f.snapshot.gpus[0].ecc_uncorrected_volatile = 3;
    f.snapshot.gpus[0].remapping_pending = true;
    f.snapshot.gpus[0].pcie_generation = 3;  // busy at gen 3: trained below its maximum
    auto bad = failing(health_checks(f));
    ASSERT_EQ(bad.size(), 4u);
    EXPECT_EQ(bad[0].id, "gpu_lost");
    EXPECT_EQ(bad[0].detail,
              "GPU1 (00000000:3B:00.0): lost, it fell off the bus (GPU-1aaaaaaa-0000-4000-8000-000000000000)");
    EXPECT_EQ(bad[1].id, "ecc");
    EXPECT_EQ(bad[1].detail, "GPU0 (00000000:18:00.0): 3 uncorrected ECC errors");
    EXPECT_EQ(bad[2].id, "row_remap");
    EXPECT_NE(bad[2].detail.find("waits for the GPU's reset"), std::string::npos);
    EXPECT_EQ(bad[3].id, "pcie_link");
    EXPECT_EQ(bad[3].detail, "GPU0 (00000000:18:00.0): PCIe gen 3 x16 (its maximum gen 5 x16) while 95 % busy");
    // Idle: a lower generation is power saving, not a fault; a narrower link is a warning.
    f = healthy();
    f.snapshot.gpus[0].utilization_percent = 0;
    f.snapshot.gpus[0].pcie_generation = 1;
    EXPECT_EQ(find(health_checks(f), "pcie_link")->status, CheckStatus::pass);
    f.snapshot.gpus[0].pcie_width = 8;
    EXPECT_EQ(find(health_checks(f), "pcie_link")->status, CheckStatus::warn);
    EXPECT_TRUE(failing(health_checks(f)).empty());
    f.snapshot.gpus[0].remapping_failed = true;
    EXPECT_NE(failing(health_checks(f)).at(0).fix.find("replace the GPU"), std::string::npos);
    // A GPU whose driver calls hang: failing too.
    f = healthy();
    f.snapshot.gpus[0].stale = true;
    f.snapshot.gpu_status = "NVML call nvmlDeviceGetPowerUsage did not return within 2000 ms; GPU values are stale";
    f.snapshot.gpu_state = GpuState::stale;
    bad = failing(health_checks(f));
    ASSERT_EQ(bad.size(), 1u);
    EXPECT_NE(bad[0].detail.find("did not return within 2000 ms"), std::string::npos) << bad[0].detail;
}

TEST(Health, TheExpectedNumberOfGpusAndNoDriver) {
    HealthFacts f = healthy();
    f.expect_gpus = 8;
    auto bad = failing(health_checks(f));
    ASSERT_EQ(bad.size(), 1u);
    EXPECT_EQ(bad[0].detail, "2 GPUs found, 8 expected");
    f.expect_gpus = 2;
    EXPECT_TRUE(failing(health_checks(f)).empty());
    // No driver: a failure, unless the node is expected to have no GPU.
    HealthFacts none;
    none.snapshot.gpu_status = "no NVIDIA driver: libnvidia-ml.so.1: cannot open shared object file";
    none.snapshot.gpu_state = GpuState::no_driver;
    bad = failing(health_checks(none));
    ASSERT_EQ(bad.size(), 1u);
    EXPECT_EQ(bad[0].id, "nvml");
    EXPECT_EQ(bad[0].detail, none.snapshot.gpu_status);
    none.expect_gpus = 0;
    EXPECT_TRUE(failing(health_checks(none)).empty());
    HealthFacts zero;
    zero.snapshot.gpu_status = "no NVIDIA GPU found";
    zero.snapshot.gpu_state = GpuState::no_gpus;
    EXPECT_EQ(failing(health_checks(zero)).size(), 1u);
}
