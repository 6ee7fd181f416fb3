// The NVML backend, unchanged, against the fake libnvidia-ml for each scenario. Every TEST
// runs in its own process (gtest_discover_tests), so each loads its scenario fresh.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <chrono>
#include <thread>

#include "sample/gpu/gpu_backend.hpp"
#include "sample/sampler.hpp"
#include "test_support.hpp"

using namespace baton;

namespace {

std::unique_ptr<GpuBackend> backend_for(const std::string& scenario, int deadline_ms = 2000) {
    test::use_scenario(scenario);
    NvmlOptions o;
    o.library_path = test::fake_nvml_library(scenario);
    o.deadline_ms = deadline_ms;
    o.xid_poll_seconds = 1;  // the XID tests' events and hang come within seconds
    return make_nvml_backend(o);
}

}  // namespace

TEST(NvmlBackend, NoLibraryMeansNoGpusAndAReason) {
    NvmlOptions o;
    o.library_path = "/nonexistent/libnvidia-ml.so.1";
    auto r = make_nvml_backend(o)->read(0);
    EXPECT_TRUE(r.gpus.empty());
    EXPECT_NE(r.status.find("no NVIDIA driver"), std::string::npos) << r.status;
}

TEST(NvmlBackend, EnvironmentVariableNamesTheLibrary) {
    test::use_scenario("no-gpu");
    setenv("BATON_NVML_LIBRARY", test::fake_nvml_library("no-gpu").c_str(), 1);
    auto r = make_nvml_backend(NvmlOptions{})->read(0);
    EXPECT_EQ(r.status, "no NVIDIA GPU found");
}

TEST(NvmlBackend, DriverNotLoaded) {
    auto r = backend_for("driver-not-loaded")->read(0);
    EXPECT_TRUE(r.gpus.empty());
    EXPECT_EQ(r.status, "NVML initialisation failed: Driver Not Loaded");
}

TEST(NvmlBackend, NoGpu) {
    auto r = backend_for("no-gpu")->read(0);
    EXPECT_TRUE(r.gpus.empty());
    EXPECT_EQ(r.status, "no NVIDIA GPU found");
}

TEST(NvmlBackend, OneIdleGpuEveryField) {
    auto b = backend_for("one-idle");
    auto r = b->read(0);
    ASSERT_EQ(r.status, "ok");
    EXPECT_EQ(r.driver_version, "550.54.15");
    EXPECT_EQ(r.nvml_version, "12.550.54.15");
    EXPECT_EQ(r.cuda_driver_version, "12.4");  // 12040
    ASSERT_EQ(r.gpus.size(), 1u);
    const GpuInfo& g = r.gpus[0];
    EXPECT_EQ(g.index, 0u);
    EXPECT_EQ(g.uuid, "GPU-11111111-2222-3333-4444-555555555555");
    EXPECT_EQ(g.name, "NVIDIA H100 PCIe");
    EXPECT_EQ(g.pci_bus_id, "00000000:17:00.0");
    EXPECT_EQ(g.utilization_percent, 0.0);
    EXPECT_EQ(g.memory_total_bytes, 85520809984u);
    EXPECT_EQ(g.memory_used_bytes, 4194304u);
    EXPECT_EQ(g.memory_reserved_bytes, 565182464u);
    EXPECT_EQ(g.memory_free_bytes, 85520809984u - 4194304u - 565182464u);
    EXPECT_EQ(g.temperature_celsius, 31.0);
    EXPECT_EQ(g.memory_temperature_celsius, 34.0);
    EXPECT_DOUBLE_EQ(*g.power_watts, 48.123);
    EXPECT_DOUBLE_EQ(*g.power_limit_watts, 350);
    EXPECT_EQ(g.sm_clock_mhz, 345u);
    EXPECT_EQ(g.sm_clock_max_mhz, 1755u);
    EXPECT_EQ(g.memory_clock_max_mhz, 1593u);
    EXPECT_EQ(g.throttle_reasons, std::vector<std::string>{"gpu_idle"});
    EXPECT_EQ(g.pcie_generation, 1u);
    EXPECT_EQ(g.pcie_generation_max, 5u);
    EXPECT_EQ(g.pcie_width, 16u);
    EXPECT_DOUBLE_EQ(*g.pcie_rx_bytes_per_second, 12 * 1024.0);
    EXPECT_DOUBLE_EQ(*g.pcie_tx_bytes_per_second, 3 * 1024.0);
    EXPECT_EQ(g.ecc_uncorrected_volatile, 0u);
    EXPECT_EQ(g.persistence_mode, true);
    EXPECT_EQ(g.compute_mode, ComputeMode::shared);
    EXPECT_EQ(g.mig_mode, false);
    EXPECT_TRUE(g.processes.empty());
    EXPECT_FALSE(g.stale);
    // GPM needs two samples: absent on the first reading, present on the second.
    EXPECT_FALSE(g.sm_activity_percent.has_value());
    auto r2 = b->read(1);
    EXPECT_EQ(r2.gpus[0].sm_activity_percent, 0.0);
    EXPECT_EQ(r2.gpus[0].tensor_activity_percent, 0.0);
}

// A board without a memory sensor answers the field NOT_SUPPORTED: no reading, and it is not asked
// again (a sensor that appears later is not believed); a sensor's filler (0 C) is no reading either.
TEST(NvmlBackend, MemoryTemperatureOnlyWhereTheBoardHasTheSensor) {
    test::TempDir dir;
    const std::string scenario = dir.path() + "/memory-temperature.json";
    dir.write("memory-temperature.json", R"({"devices": [
        {"values": {"uuid": "GPU-a", "name": "NVIDIA L4", "pci_bus_id": "00000000:17:00.0", "temperature": 40},
         "ticks": [{}, {"memory_temperature": 50}]},
        {"values": {"uuid": "GPU-b", "name": "NVIDIA H200", "pci_bus_id": "00000000:18:00.0", "temperature": 40,
                    "memory_temperature": 45},
         "ticks": [{}, {"memory_temperature": 0}, {"memory_temperature": 47}]}]})");
    setenv("BATON_FAKE_NVML_SCENARIO", scenario.c_str(), 1);
    NvmlOptions o;
    o.library_path = test::fake_nvml_library("one-idle");
    o.xid_events = false;
    o.pcie_interval_seconds = 0;  // the slow group, the memory temperature's, on every reading
    auto b = make_nvml_backend(o);
    auto r0 = b->read(0);
    ASSERT_EQ(r0.gpus.size(), 2u) << r0.status;
    EXPECT_FALSE(r0.gpus[0].memory_temperature_celsius.has_value());
    EXPECT_EQ(r0.gpus[1].memory_temperature_celsius, 45.0);
    auto r1 = b->read(1);
    EXPECT_FALSE(r1.gpus[0].memory_temperature_celsius.has_value());
    EXPECT_FALSE(r1.gpus[1].memory_temperature_celsius.has_value());
    auto r2 = b->read(2);
    EXPECT_EQ(r2.gpus[1].memory_temperature_celsius, 47.0);
}

TEST(NvmlBackend, EightBusyGpusInPciOrderWithProcesses) {
    auto b = backend_for("eight-busy");
    b->read(0);
    auto r = b->read(1);  // tick 1
    ASSERT_EQ(r.status, "ok");
    ASSERT_EQ(r.gpus.size(), 8u);
    for (unsigned i = 0; i + 1 < 8; ++i) EXPECT_LT(r.gpus[i].pci_bus_id, r.gpus[i + 1].pci_bus_id);
    for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(r.gpus[i].index, i);
    // Bus 18 is NVML's device 1 in the scenario: it becomes index 0.
    const GpuInfo& g0 = r.gpus[0];
    EXPECT_EQ(g0.pci_bus_id, "00000000:18:00.0");
    EXPECT_EQ(g0.uuid, "GPU-8b0a0001-0000-4000-8000-000000000001");
    EXPECT_EQ(g0.utilization_percent, 97.0);
    EXPECT_EQ(g0.memory_used_bytes, (64ull << 30) + (512ull << 20));
    EXPECT_DOUBLE_EQ(*g0.power_watts, 655);
    EXPECT_EQ(g0.compute_mode, ComputeMode::exclusive_process);
    EXPECT_DOUBLE_EQ(*g0.sm_activity_percent, 82.0);
    EXPECT_DOUBLE_EQ(*g0.tensor_activity_percent, 43.5);
    EXPECT_TRUE(g0.throttle_reasons->empty());
    ASSERT_EQ(g0.processes.size(), 3u);
    EXPECT_EQ(g0.processes[0].pid, 41010u);
    EXPECT_EQ(g0.processes[0].type, GpuProcessType::compute);
    EXPECT_EQ(g0.processes[0].used_memory_bytes, 61ull << 30);
    EXPECT_EQ(g0.processes[0].sm_utilization_percent, 89.0);
    EXPECT_EQ(g0.processes[2].type, GpuProcessType::graphics);
    EXPECT_FALSE(g0.processes[2].sm_utilization_percent.has_value());
}

TEST(NvmlBackend, PcieThroughputIsSampledAtMostEveryInterval) {
    auto b = backend_for("eight-busy");
    auto r0 = b->read(100.0);  // tick 0: 1500000 KB/s (+ device offset)
    auto r1 = b->read(101.0);  // tick 1: the scenario says 1600000, but 1 s < 5 s
    auto r2 = b->read(106.0);  // tick 2: 1700000, re-read
    EXPECT_DOUBLE_EQ(*r0.gpus[0].pcie_rx_bytes_per_second, 1500001 * 1024.0);
    EXPECT_DOUBLE_EQ(*r1.gpus[0].pcie_rx_bytes_per_second, 1500001 * 1024.0);
    EXPECT_DOUBLE_EQ(*r2.gpus[0].pcie_rx_bytes_per_second, 1700001 * 1024.0);
}

TEST(NvmlBackend, OldDriverWithoutV3Symbols) {
    auto b = backend_for("no-v3");
    auto r = b->read(0);
    r = b->read(1);
    ASSERT_EQ(r.gpus.size(), 1u);
    const GpuInfo& g = r.gpus[0];
    // Memory through the v1 call: no reserved figure.
    EXPECT_EQ(g.memory_total_bytes, 17179869184u);
    EXPECT_FALSE(g.memory_reserved_bytes.has_value());
    // Throttle reasons through the older symbol name.
    EXPECT_EQ(g.throttle_reasons, std::vector<std::string>{"sw_power_cap"});
    // No GPM on this driver: absent, not 0.
    EXPECT_FALSE(g.sm_activity_percent.has_value());
    // Processes through the 16-byte v1 records.
    ASSERT_EQ(g.processes.size(), 2u);
    EXPECT_EQ(g.processes[0].pid, 9980u);
    EXPECT_EQ(g.processes[0].used_memory_bytes, 6498025472u);
    EXPECT_EQ(g.processes[1].pid, 10121u);
    EXPECT_EQ(g.processes[1].sm_utilization_percent, 49.0);
}

TEST(NvmlBackend, R535ThirtyTwoByteRecords) {
    auto r = backend_for("r535-records")->read(0);
    ASSERT_EQ(r.gpus.size(), 1u);
    const auto& p = r.gpus[0].processes;
    ASSERT_EQ(p.size(), 3u);
    EXPECT_EQ(p[0].pid, 5001u);
    EXPECT_EQ(p[1].pid, 5002u);
    EXPECT_EQ(p[1].used_memory_bytes, 20ull << 30);
    EXPECT_EQ(p[2].pid, 5003u);
    EXPECT_EQ(p[2].used_memory_bytes, 30ull << 30);
}

// Recorded from a real H200 by scripts/device-check.sh (docs/device-runs/2026-11-30-h200), idle.
TEST(NvmlBackend, RecordedH200) {
    auto r = backend_for("h200-recorded")->read(5);
    ASSERT_EQ(r.status, "ok");
    ASSERT_EQ(r.gpus.size(), 1u);
    const GpuInfo& g = r.gpus[0];
    EXPECT_EQ(g.name, "NVIDIA H200");
    EXPECT_EQ(g.memory_total_bytes, 150754820096ull);
    EXPECT_EQ(g.memory_reserved_bytes, 644939776ull);
    EXPECT_EQ(g.memory_used_bytes, 0ull);
    EXPECT_EQ(g.power_limit_watts, 700.0);
    EXPECT_EQ(g.pcie_generation, 5u);
    EXPECT_EQ(g.pcie_width, 16u);
    EXPECT_EQ(g.sm_clock_mhz, 345u);
    ASSERT_TRUE(g.throttle_reasons);
    EXPECT_EQ(*g.throttle_reasons, (std::vector<std::string>{"gpu_idle"}));
}

TEST(NvmlBackend, GpuLostMidRun) {
    auto b = backend_for("gpu-lost");
    auto r = b->read(0);
    EXPECT_EQ(r.status, "ok");
    r = b->read(1);
    EXPECT_EQ(r.status, "ok");
    r = b->read(2);  // tick 2: GPU 1 is lost
    ASSERT_EQ(r.gpus.size(), 2u);
    EXPECT_FALSE(r.gpus[0].error.has_value());
    EXPECT_EQ(r.gpus[0].utilization_percent, 99.0);
    EXPECT_EQ(r.gpus[1].error, "GPU is lost");
    EXPECT_EQ(r.gpus[1].uuid, "GPU-l1111111-0000-4000-8000-000000000001");  // identity kept
    EXPECT_FALSE(r.gpus[1].utilization_percent.has_value());                // values dropped
    EXPECT_EQ(r.status, "GPU1: GPU is lost");
    r = b->read(3);  // stays lost, the other GPU keeps working
    EXPECT_EQ(r.gpus[1].error, "GPU is lost");
    EXPECT_EQ(r.gpus[0].utilization_percent, 99.0);
}

TEST(NvmlBackend, HangingCallReturnsWithinItsDeadline) {
    // The library mapped first, so that the backend's own dlopen (under the same 300 ms deadline) is
    // a reference count, not a load that a busy sanitizer run can take longer than that for.
    test::use_scenario("hang");  // (before the load: the fake reads its scenario from the environment)
    void* preload = dlopen(test::fake_nvml_library("hang").c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(preload, nullptr) << dlerror();
    auto b = backend_for("hang", 300);
    auto r = b->read(0);
    ASSERT_EQ(r.status, "ok");
    EXPECT_DOUBLE_EQ(*r.gpus[0].power_watts, 231);
    auto t0 = std::chrono::steady_clock::now();
    r = b->read(1);  // tick 1: nvmlDeviceGetPowerUsage on GPU 0 never returns
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(waited, 0.3);
    EXPECT_LT(waited, 1.0);
    EXPECT_EQ(r.status, "NVML call nvmlDeviceGetPowerUsage did not return within 300 ms; GPU values are stale");
    ASSERT_EQ(r.gpus.size(), 2u);
    EXPECT_TRUE(r.gpus[0].stale);
    EXPECT_TRUE(r.gpus[1].stale);
    EXPECT_DOUBLE_EQ(*r.gpus[0].power_watts, 231);  // the last good values
    // While the call is still stuck, later reads answer at once.
    t0 = std::chrono::steady_clock::now();
    r = b->read(2);
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(waited, 0.05);
    EXPECT_TRUE(r.gpus[0].stale);
    // Destroying the backend with the worker stuck must not hang either.
    t0 = std::chrono::steady_clock::now();
    b.reset();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.05);
}

// A reading that overran its tick's deadline but came back is the newest good one: the next
// tick that overruns shows it, not the values from before it (here: none at all).
TEST(NvmlBackend, AReadingThatCameBackLateIsKeptForTheNextStaleTick) {
    auto b = backend_for("slow", 200);
    auto r = b->read(0);  // the power call takes 0.5 s: past the deadline, nothing read before it
    EXPECT_NE(r.status.find("did not return within 200 ms"), std::string::npos) << r.status;
    EXPECT_TRUE(r.gpus.empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the late tick-0 reading is in
    r = b->read(1);                                               // overruns again: the late reading, marked stale
    EXPECT_NE(r.status.find("did not return within 200 ms"), std::string::npos) << r.status;
    ASSERT_EQ(r.gpus.size(), 2u);
    EXPECT_TRUE(r.gpus[0].stale);
    EXPECT_DOUBLE_EQ(*r.gpus[0].power_watts, 231);
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
}

TEST(NvmlBackend, JoinsGpuProcessesToTheProcessTable) {
    Snapshot s;
    ProcessInfo a;
    a.pid = 10;
    a.container_pid = 3;
    ProcessInfo b;
    b.pid = 20;
    s.processes = {a, b};
    GpuInfo g0, g1;
    g0.index = 0;
    g1.index = 1;
    GpuProcess p10;
    p10.pid = 10;
    p10.used_memory_bytes = 100;
    GpuProcess p10b = p10;
    p10b.used_memory_bytes = 50;
    GpuProcess p99;
    p99.pid = 99;  // not in our pid namespace: stays unjoined
    p99.used_memory_bytes = 7;
    g0.processes = {p10, p99};
    g1.processes = {p10b};
    s.gpus = {g0, g1};
    join_gpu_processes(s);
    EXPECT_EQ(s.processes[0].gpu_memory_bytes, 150u);
    EXPECT_EQ(s.processes[0].gpu_indices, (std::vector<unsigned>{0, 1}));
    EXPECT_EQ(s.gpus[0].processes[0].container_pid, 3u);
    EXPECT_FALSE(s.processes[1].gpu_memory_bytes.has_value());
    EXPECT_FALSE(s.gpus[0].processes[1].container_pid.has_value());
}

TEST(NvmlBackend, PanelFieldsAbsentWhereUnsupported) {
    auto b = backend_for("one-idle");
    const GpuInfo g = b->read(0).gpus.at(0);
    EXPECT_FALSE(g.fan_speed_percent.has_value());  // an H100 PCIe has no fan of its own
    EXPECT_EQ(g.encoder_utilization_percent, 0.0);
    EXPECT_EQ(g.decoder_utilization_percent, 0.0);
    EXPECT_EQ(g.ecc_corrected_volatile, 0u);
    EXPECT_EQ(g.remapped_rows_corrected, 0u);
    EXPECT_EQ(g.remapping_pending, false);
    EXPECT_FALSE(g.retired_pages.has_value());        // not set by the scenario: not supported
    EXPECT_FALSE(g.nvlink_links_active.has_value());  // no NVLink at all: absent, not 0
    EXPECT_FALSE(g.nvlink_rx_bytes_per_second.has_value());
    EXPECT_TRUE(g.mig_instances.empty());
}

TEST(NvmlBackend, FanVideoEnginesAndRowRemapping) {
    auto b = backend_for("throttled");
    const GpuInfo g = b->read(0).gpus.at(0);
    EXPECT_EQ(g.fan_speed_percent, 100.0);
    EXPECT_EQ(g.encoder_utilization_percent, 0.0);
    EXPECT_EQ(g.decoder_utilization_percent, 12.0);
    EXPECT_EQ(g.ecc_corrected_volatile, 3u);
    EXPECT_EQ(g.remapped_rows_corrected, 1u);
    EXPECT_EQ(g.remapped_rows_uncorrected, 0u);
    EXPECT_EQ(g.remapping_pending, true);
    EXPECT_EQ(g.remapping_failed, false);
}

TEST(NvmlBackend, NvlinkLinksAndTrafficFromTheCounters) {
    auto b = backend_for("eight-busy");
    auto r0 = b->read(100.0);
    const GpuInfo& g0 = r0.gpus.at(0);
    EXPECT_EQ(g0.nvlink_links_active, 18u);
    EXPECT_FALSE(g0.nvlink_rx_bytes_per_second.has_value());  // a rate needs two readings
    // One tick later (5000000 KiB per link per tick), 2 s of our clock, but 1 s between the driver's
    // timestamps of the counters: the driver's time wins.
    auto r1 = b->read(102.0);
    const GpuInfo& g1 = r1.gpus.at(0);
    ASSERT_TRUE(g1.nvlink_rx_bytes_per_second.has_value());
    EXPECT_DOUBLE_EQ(*g1.nvlink_rx_bytes_per_second, 18 * 5000000.0 * 1024);
    EXPECT_DOUBLE_EQ(*g1.nvlink_tx_bytes_per_second, 18 * 5000000.0 * 1024);
    EXPECT_EQ(
        r1.gpus.at(3).remapped_rows_corrected.value_or(0) + r1.gpus.at(0).remapped_rows_corrected.value_or(0) +
            r1.gpus.at(1).remapped_rows_corrected.value_or(0) + r1.gpus.at(2).remapped_rows_corrected.value_or(0) +
            r1.gpus.at(4).remapped_rows_corrected.value_or(0) + r1.gpus.at(5).remapped_rows_corrected.value_or(0) +
            r1.gpus.at(6).remapped_rows_corrected.value_or(0) + r1.gpus.at(7).remapped_rows_corrected.value_or(0),
        2u);
}

TEST(NvmlBackend, MigInstancesWithTheirMemoryAndProcesses) {
    auto b = backend_for("mig");
    auto r = b->read(0);
    ASSERT_EQ(r.gpus.size(), 2u);
    const GpuInfo& g = r.gpus[0];
    EXPECT_EQ(g.mig_mode, true);
    EXPECT_FALSE(g.utilization_percent.has_value());  // not supported in MIG mode: absent, not 0
    ASSERT_EQ(g.mig_instances.size(), 4u);
    const MigInstance& big = g.mig_instances[0];
    EXPECT_EQ(big.gpu_instance_id, 2u);
    EXPECT_EQ(big.compute_instance_id, 0u);
    EXPECT_EQ(big.uuid, "MIG-8a1f5e2c-3d4b-5a6c-9e8f-7a6b5c4d3e2f");
    EXPECT_EQ(big.name, "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
    EXPECT_EQ(big.memory_total_bytes, 42580574208u);
    EXPECT_EQ(big.memory_used_bytes, 35433480192u);
    EXPECT_EQ(big.pids, std::vector<std::uint32_t>{52100});
    EXPECT_EQ(g.mig_instances[2].gpu_instance_id, 9u);
    EXPECT_TRUE(g.mig_instances[3].pids.empty());
    // The GPU's own list is empty to an unprivileged caller: the MIG devices' processes join it.
    ASSERT_EQ(g.processes.size(), 3u);
    EXPECT_EQ(g.processes[0].pid, 52100u);
    EXPECT_EQ(g.processes[0].gpu_instance_id, 2u);
    EXPECT_EQ(g.processes[0].compute_instance_id, 0u);
    EXPECT_EQ(g.processes[0].used_memory_bytes, 34359738368u);
    // The GPU without MIG: no instances, no instance ids on its processes (0xFFFFFFFF in the records).
    const GpuInfo& plain = r.gpus[1];
    EXPECT_EQ(plain.mig_mode, false);
    EXPECT_TRUE(plain.mig_instances.empty());
    ASSERT_EQ(plain.processes.size(), 1u);
    EXPECT_FALSE(plain.processes[0].gpu_instance_id.has_value());
    EXPECT_EQ(plain.nvlink_links_active, 4u);
}

namespace {

const XidCount* xid_of(const GpuInfo& g, unsigned xid) {
    if (!g.xid_errors) return nullptr;
    for (const XidCount& x : *g.xid_errors)
        if (x.xid == xid) return &x;
    return nullptr;
}

}  // namespace

TEST(NvmlBackend, XidEventsAreCountedOnAThreadOfTheirOwn) {
    auto b = backend_for("xid");
    auto r = b->read(0);
    ASSERT_EQ(r.gpus.size(), 3u);
    for (const GpuInfo& g : r.gpus) EXPECT_FALSE(g.xid_errors.has_value()) << "watched only after the first reading";
    // Ticks 1..3 let the scenario's events out; the watch polls once a second here.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (double t = 1;; ++t) {
        r = b->read(t);
        const XidCount* storm = xid_of(r.gpus[0], 31);
        if (storm && storm->count == 5000 && xid_of(r.gpus[1], 79)) break;
        ASSERT_LT(std::chrono::steady_clock::now(), until) << "the XIDs never all came";
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const GpuInfo& g0 = r.gpus[0];
    ASSERT_TRUE(g0.xid_errors);
    ASSERT_EQ(g0.xid_errors->size(), 2u);  // by XID
    EXPECT_EQ((*g0.xid_errors)[0].xid, 13u);
    EXPECT_EQ((*g0.xid_errors)[0].count, 1u);
    EXPECT_EQ((*g0.xid_errors)[1].count, 5000u);  // the storm, every one counted
    EXPECT_GT((*g0.xid_errors)[1].last_unix_ms, 1700000000000);
    // GPU 1 fell off the bus: lost, and its XID 79 kept beside the loss.
    EXPECT_TRUE(r.gpus[1].lost);
    ASSERT_TRUE(r.gpus[1].xid_errors);
    EXPECT_EQ(r.gpus[1].xid_errors->size(), 1u);
    // The GPU the driver gives no XID events for: not watched, absent rather than "none came".
    EXPECT_FALSE(r.gpus[2].xid_errors.has_value());
    // No more come: the counts hold.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    r = b->read(20);
    EXPECT_EQ(xid_of(r.gpus[0], 31)->count, 5000u);
    EXPECT_EQ(xid_of(r.gpus[0], 13)->count, 1u);
    // The backend ends at once: the watch sleeps on its own condition between polls.
    const auto t0 = std::chrono::steady_clock::now();
    b.reset();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.2);
}

TEST(NvmlBackend, AWatchedGpuWithoutXidsHasAnEmptyList) {
    // Watched, and none came: an empty list (a GPU without the events has none: absent).
    auto b = backend_for("one-idle");
    b->read(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    auto r = b->read(1);
    ASSERT_EQ(r.gpus.size(), 1u);
    ASSERT_TRUE(r.gpus[0].xid_errors.has_value()) << "one-idle gives XID events: watched";
    EXPECT_TRUE(r.gpus[0].xid_errors->empty());
}

TEST(NvmlBackend, AnXidWaitStuckInTheDriverHoldsUpNoReading) {
    auto b = backend_for("xid-hang", 300);
    auto r = b->read(0);
    ASSERT_EQ(r.status, "ok");
    // The watch polls once a second: within 1.5 s its poll is stuck (from tick 1 it never returns).
    for (double t = 1; t <= 10; ++t) {
        const auto t0 = std::chrono::steady_clock::now();
        r = b->read(t);
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.3);
        EXPECT_EQ(r.status, "ok");
        EXPECT_FALSE(r.gpus[0].stale);
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
    }
    // Ending waits for it no longer than the call deadline, then leaves it behind.
    const auto t0 = std::chrono::steady_clock::now();
    b.reset();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.6);
    EXPECT_TRUE(gpu_worker_abandoned());
}

TEST(NvmlBackend, XidEventsOffAreNotWatched) {
    test::use_scenario("xid");
    NvmlOptions o;
    o.library_path = test::fake_nvml_library("xid");
    o.xid_events = false;  // [gpu] xid_events = false
    auto b = make_nvml_backend(o);
    for (double t = 0; t < 5; ++t) {
        const GpuReading r = b->read(t);
        for (const GpuInfo& g : r.gpus) EXPECT_FALSE(g.xid_errors.has_value()) << "tick " << t;
        std::this_thread::sleep_for(std::chrono::milliseconds(120));
    }
}
