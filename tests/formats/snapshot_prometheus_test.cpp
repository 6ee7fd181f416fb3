// Prometheus text output: accepted by the real promtool, every sample typed, counters carrying the
// kernel's own numbers, per-process series bounded, hostile names kept inside their labels.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>

#include "sample/sampler.hpp"
#include "formats/snapshot_prometheus.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::formats;

namespace {

Snapshot fixture_snapshot(const std::string& scenario = "throttled") {
    test::TempDir d;
    test::copy_fixture("machine", d.path());
    test::use_scenario(scenario);
    SamplerOptions o;
    o.proc_root = d.path() + "/proc";
    o.sys_root = d.path() + "/sys";
    o.shm_path = d.path();
    o.nvml.library_path = test::fake_nvml_library(scenario);
    o.priming_seconds = 0.01;
    Sampler s(o);
    Snapshot snap;
    s.take(snap);
    return snap;
}

std::string exposition(PrometheusOptions options = {}) {
    Snapshot snap = fixture_snapshot();
    // A hostile process name must stay inside its label.
    snap.processes[0].command = "a\"b\\c\nd";
    snap.processes[0].cpu_percent = 500;                      // among the top processes
    snap.gpus.at(0).xid_errors = {{{79, 1, 1764400000000}}};  // the XID families, for promtool
    std::string out;
    append_snapshot_prometheus(snap, options, out);
    return out;
}

bool has(const std::string& text, const std::string& line) {
    return text.find("\n" + line + "\n") != std::string::npos;
}

int count_samples(const std::string& text, const std::string& name) {
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line))
        if (line.rfind(name + "{", 0) == 0 || line.rfind(name + " ", 0) == 0) ++n;
    return n;
}

// `promtool check metrics` on an exposition: its exit status and the lines it printed (lint, one a line).
std::pair<int, std::vector<std::string>> promtool_check(const std::string& text) {
    test::TempDir d;
    d.write("metrics.txt", text);
    auto r = test::run({"/bin/sh", "-c", "promtool check metrics < " + d.path() + "/metrics.txt"});
    std::vector<std::string> lines;
    std::istringstream in(r.out + r.err);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return {r.exit_code, lines};
}

}  // namespace

TEST(SnapshotPrometheus, PromtoolAcceptsIt) {
    const auto [status, lines] = promtool_check(exposition());
    EXPECT_EQ(status, 0);
    // No lint warnings either: counters end in _total, units are base units.
    EXPECT_EQ(lines, std::vector<std::string>{});
}

TEST(SnapshotPrometheus, PromtoolParsesDcgmCompat) {
    PrometheusOptions o;
    o.dcgm_compat = true;
    const auto [status, lines] = promtool_check(exposition(o));
    // dcgm-exporter's own label names (UUID, modelName, Hostname) are camelCase, and its counters end
    // in an upper-case _TOTAL (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL), both of which promtool's linter flags
    // (exit 3); kept on purpose, so that its dashboards work. Nothing else may be wrong.
    EXPECT_EQ(status, 3);
    for (const std::string& line : lines) {
        EXPECT_EQ(line.rfind("DCGM_FI_", 0), 0u) << line;
        const bool camel =
            line.find("label names should be written in 'snake_case' not 'camelCase'") != std::string::npos;
        const bool upper_total = line.find("_TOTAL counter metrics should have \"_total\" suffix") != std::string::npos;
        EXPECT_TRUE(camel || upper_total) << line;
    }
    EXPECT_FALSE(lines.empty());
}

TEST(SnapshotPrometheus, EverySampleHasHelpAndType) {
    std::istringstream in(exposition());
    std::set<std::string> typed, helped;
    std::string line;
    int samples = 0;
    while (std::getline(in, line)) {
        if (line.rfind("# TYPE ", 0) == 0) {
            const std::string name = line.substr(7, line.find(' ', 7) - 7);
            typed.insert(name);
            // Counters, and only counters, end in _total.
            const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
            EXPECT_EQ(line.substr(line.rfind(' ') + 1) == "counter", total) << line;
        } else if (line.rfind("# HELP ", 0) == 0) {
            helped.insert(line.substr(7, line.find(' ', 7) - 7));
        } else if (!line.empty()) {
            std::string name = line.substr(0, line.find_first_of("{ "));
            EXPECT_TRUE(typed.count(name)) << name;
            EXPECT_TRUE(helped.count(name)) << name;
            EXPECT_EQ(name.rfind("baton_", 0), 0u) << name;
            ++samples;
        }
    }
    EXPECT_GT(samples, 40);
}

TEST(SnapshotPrometheus, CountersAreTheKernelsOwn) {
    const std::string t = exposition();
    // /proc/stat: cpu0 5000 user ticks at USER_HZ 100; diskstats: 200000 sectors of 512 bytes.
    EXPECT_TRUE(has(t, "baton_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 50")) << t;
    EXPECT_TRUE(has(t, "baton_cpu_seconds_total{cpu=\"1\",mode=\"idle\"} 400"));
    EXPECT_EQ(count_samples(t, "baton_cpu_seconds_total"), 2 * 8);
    EXPECT_TRUE(has(t, "baton_disk_read_bytes_total{device=\"nvme0n1\"} 102400000"));
    EXPECT_TRUE(has(t, "baton_disk_written_bytes_total{device=\"nvme0n1\"} 204800000"));
    EXPECT_TRUE(has(t, "baton_disk_io_time_seconds_total{device=\"nvme0n1\"} 1"));
    EXPECT_TRUE(has(t, "baton_network_receive_bytes_total{device=\"eth0\"} 5000000"));
    EXPECT_TRUE(has(t, "baton_network_transmit_bytes_total{device=\"eth0\"} 2000000"));
    EXPECT_TRUE(has(t, "baton_context_switches_total 5000000"));
    EXPECT_TRUE(has(t, "baton_major_page_faults_total 1000"));
    EXPECT_NE(t.find("baton_swap_in_bytes_total "), std::string::npos);
    EXPECT_NE(t.find("baton_pressure_stalled_seconds_total{resource=\"io\",kind=\"full\"} "), std::string::npos);
    EXPECT_TRUE(has(t, "baton_network_speed_bytes{device=\"eth0\"} 3125000000"));
}

TEST(SnapshotPrometheus, EveryThrottleReasonHasASeries) {
    const std::string t = exposition();
    const std::string gpu = "gpu=\"0\",uuid=\"GPU-tttttttt-0000-4000-8000-000000000000\"";
    EXPECT_TRUE(has(t, "baton_gpu_throttle_active{" + gpu + ",reason=\"hw_thermal_slowdown\"} 1")) << t;
    EXPECT_TRUE(has(t, "baton_gpu_throttle_active{" + gpu + ",reason=\"sync_boost\"} 0"));
    EXPECT_TRUE(has(t, "baton_gpu_throttle_active{" + gpu + ",reason=\"gpu_idle\"} 0"));
    EXPECT_TRUE(has(t, "baton_gpu_sm_clock_hertz{" + gpu + "} 900000000"));
    EXPECT_TRUE(has(t, "baton_gpu_driver_info{version=\"550.00.00\"} 1"));
}

TEST(SnapshotPrometheus, ProcessSeriesAreBoundedAndLabelsEscaped) {
    PrometheusOptions o;
    o.process_series = 2;
    const std::string t = exposition(o);
    EXPECT_EQ(count_samples(t, "baton_process_cpu_seconds_total"), 2) << t;
    EXPECT_EQ(count_samples(t, "baton_process_resident_memory_bytes"), 2);
    EXPECT_NE(t.find("command=\"a\\\"b\\\\c?d\""), std::string::npos) << t;  // printable: the newline is '?'
    o.process_series = 0;
    EXPECT_EQ(count_samples(exposition(o), "baton_process_cpu_seconds_total"), 0);
}

TEST(SnapshotPrometheus, LabelValuesAreValidUtf8) {
    std::string out;
    append_label_value("ok \xff\xfe caf\xc3\xa9 \xe6\x97\xa5", out);
    EXPECT_EQ(out, "ok ?? caf\xc3\xa9 \xe6\x97\xa5");
}

TEST(SnapshotPrometheus, GpuCountersAndDcgmCompat) {
    Snapshot snap = fixture_snapshot("eight-busy");
    PrometheusOptions o;
    o.dcgm_compat = true;
    std::string t;
    append_snapshot_prometheus(snap, o, t);
    ASSERT_FALSE(snap.gpus.empty());
    const GpuInfo& g = snap.gpus[0];
    ASSERT_TRUE(g.energy_joules_total && g.memory_used_bytes && g.utilization_percent);
    EXPECT_GT(*g.energy_joules_total, 123456.789);  // where the scenario starts it, plus ticks at its power
    EXPECT_NE(t.find("baton_gpu_energy_joules_total{gpu=\"0\""), std::string::npos);
    EXPECT_NE(t.find("baton_gpu_pcie_replays_total{gpu=\"0\""), std::string::npos);
    // dcgm-exporter's names, units and labels.
    const std::string labels = "gpu=\"0\",UUID=\"" + g.uuid + "\",device=\"nvidia" +
                               std::to_string(g.minor_number.value_or(0)) + "\",modelName=\"NVIDIA H200\",Hostname=\"" +
                               snap.host.hostname + "\",hostname=\"" + snap.host.hostname + "\",pci_bus_id=\"" +
                               g.pci_bus_id + "\",DCGM_FI_DRIVER_VERSION=\"" + snap.gpu_driver_version.value_or("") +
                               "\"";
    // The fixture's Slurm job 4242 was allocated Slurm's GPUs 0 and 1 (SLURM_JOB_GPUS: device minor
    // numbers 0 and 1): dcgm-exporter's hpc_job on theirs, on no other GPU's.
    const auto allocated = [](const GpuInfo& x) { return x.minor_number && *x.minor_number < 2; };
    const std::string gpu0 = labels + (allocated(g) ? ",hpc_job=\"4242\"" : "");
    int with_job = 0;
    for (const GpuInfo& x : snap.gpus) {
        const std::size_t line = t.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"" + std::to_string(x.index) + "\"");
        ASSERT_NE(line, std::string::npos);
        const bool tagged = t.substr(line, t.find('\n', line) - line).find("hpc_job=\"4242\"") != std::string::npos;
        EXPECT_EQ(tagged, allocated(x)) << x.index;
        with_job += tagged;
    }
    EXPECT_EQ(with_job, 2);
    std::ostringstream fb;
    fb << "DCGM_FI_DEV_FB_USED{" << gpu0 << "} ";
    EXPECT_NE(t.find(fb.str()), std::string::npos) << t;
    const std::size_t at = t.find(fb.str()) + fb.str().size();
    EXPECT_NEAR(std::stod(t.substr(at, t.find('\n', at) - at)), static_cast<double>(*g.memory_used_bytes) / 1048576.0,
                0.01);
    EXPECT_TRUE(
        has(t, "DCGM_FI_DEV_GPU_UTIL{" + gpu0 + "} " + std::to_string(static_cast<int>(*g.utilization_percent))));
    EXPECT_NE(t.find("DCGM_FI_PROF_SM_ACTIVE{" + gpu0 + "} 0."), std::string::npos);
    EXPECT_NE(t.find("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" + gpu0 + "} "), std::string::npos);
    // The fields baton reads that dcgm-exporter has too: video engines, PCIe and NVLink bytes, under
    // dcgm-exporter 4.10's names (*_BYTES_PER_SECOND) and the older ones dashboards still query, both
    // with the same value.
    for (const char* f :
         {"DCGM_FI_DEV_ENC_UTIL{", "DCGM_FI_DEV_DEC_UTIL{", "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND{",
          "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND{", "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND{",
          "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND{", "DCGM_FI_PROF_PCIE_RX_BYTES{", "DCGM_FI_PROF_PCIE_TX_BYTES{",
          "DCGM_FI_PROF_NVLINK_RX_BYTES{", "DCGM_FI_PROF_NVLINK_TX_BYTES{"})
        EXPECT_NE(t.find(f), std::string::npos) << f;
    auto value_of = [&](const std::string& family) {
        const std::size_t where = t.find(family + "{" + gpu0 + "} ");
        if (where == std::string::npos) return std::string("absent");
        const std::size_t from = where + family.size() + gpu0.size() + 3;
        return t.substr(from, t.find('\n', from) - from);
    };
    EXPECT_EQ(value_of("DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND"), value_of("DCGM_FI_PROF_PCIE_RX_BYTES"));
    EXPECT_NE(value_of("DCGM_FI_PROF_PCIE_RX_BYTES"), "absent");
    // In Kubernetes the host label is the node's (NODE_NAME), not the pod's hostname.
    o.dcgm_hostname = "gpu-node-7";
    std::string k8s;
    append_snapshot_prometheus(snap, o, k8s);
    EXPECT_NE(k8s.find("Hostname=\"gpu-node-7\",hostname=\"gpu-node-7\""), std::string::npos);
    // Off by default.
    std::string plain;
    append_snapshot_prometheus(snap, PrometheusOptions{}, plain);
    EXPECT_EQ(plain.find("DCGM_"), std::string::npos);
}

TEST(SnapshotPrometheus, XidCountersAndDcgmsLastXid) {
    Snapshot snap = fixture_snapshot("xid");
    ASSERT_EQ(snap.gpus.size(), 3u);
    snap.gpus[0].xid_errors = {{{13, 1, 1764400000000}, {31, 5000, 1764400009000}}};
    snap.gpus[1].xid_errors = std::vector<XidCount>{};
    snap.gpus[2].xid_errors.reset();
    PrometheusOptions o;
    o.dcgm_compat = true;
    std::string t;
    append_snapshot_prometheus(snap, o, t);
    const std::string g0 = "gpu=\"0\",uuid=\"" + snap.gpus[0].uuid + "\"";
    const std::string g1 = "gpu=\"1\",uuid=\"" + snap.gpus[1].uuid + "\"";
    EXPECT_TRUE(has(t, "baton_gpu_xid_errors_total{" + g0 + ",xid=\"31\"} 5000")) << t;
    EXPECT_TRUE(has(t, "baton_gpu_xid_errors_total{" + g0 + ",xid=\"13\"} 1"));
    EXPECT_TRUE(has(t, "baton_gpu_xid_events_total{" + g0 + "} 5001"));
    // Watched with none yet: the total is there at 0 (so increase() sees the first); per-XID none.
    EXPECT_TRUE(has(t, "baton_gpu_xid_events_total{" + g1 + "} 0"));
    EXPECT_EQ(count_samples(t, "baton_gpu_xid_events_total"), 2);  // not the unwatched GPU
    EXPECT_EQ(count_samples(t, "baton_gpu_xid_errors_total"), 2);
    // dcgm-exporter's gauge: the newest XID's number, 0 before any.
    const std::size_t at = t.find("DCGM_FI_DEV_XID_ERRORS{gpu=\"0\"");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(t.substr(t.find('}', at), 5), "} 31\n");
    const std::size_t at1 = t.find("DCGM_FI_DEV_XID_ERRORS{gpu=\"1\"");
    ASSERT_NE(at1, std::string::npos);
    EXPECT_EQ(t.substr(t.find('}', at1), 4), "} 0\n");
    EXPECT_EQ(t.find("DCGM_FI_DEV_XID_ERRORS{gpu=\"2\""), std::string::npos);
}

TEST(SnapshotPrometheus, PanelFieldsAndMigInstances) {
    Snapshot snap = fixture_snapshot("mig");
    std::string t;
    append_snapshot_prometheus(snap, PrometheusOptions{}, t);
    const std::string g0 = "gpu=\"0\",uuid=\"GPU-4f3c2a10-6b1d-4e7a-9c2e-1a2b3c4d5e6f\"";
    EXPECT_TRUE(has(t, "baton_gpu_mig_mode{" + g0 + "} 1")) << t;
    EXPECT_TRUE(has(t, "baton_gpu_mig_instance_memory_total_bytes{" + g0 +
                           ",gpu_instance=\"2\",compute_instance=\"0\"} 42580574208"))
        << t;
    EXPECT_TRUE(has(t, "baton_gpu_mig_instance_processes{" + g0 + ",gpu_instance=\"10\",compute_instance=\"0\"} 0"));
    EXPECT_NE(t.find("baton_gpu_mig_instance_info{" + g0 +
                     ",gpu_instance=\"3\",compute_instance=\"0\",mig_uuid=\"MIG-1b2c3d4e-5f60-4718-8a9b-0c1d2e3f4a5b\","
                     "name=\"NVIDIA H100 80GB HBM3 MIG 2g.20gb\"} 1"),
              std::string::npos);
    EXPECT_TRUE(has(t, "baton_gpu_nvlink_links_active{" + g0 + "} 4"));
    EXPECT_TRUE(has(t, "baton_gpu_remapped_rows{" + g0 + ",cause=\"uncorrected\"} 0"));
    EXPECT_TRUE(has(t, "baton_gpu_remapping_failed{" + g0 + "} 0"));
    // dcgm-exporter's MIG series: the instance's memory with GPU_I_PROFILE and GPU_I_ID, and the rows.
    PrometheusOptions dcgm;
    dcgm.dcgm_compat = true;
    std::string d;
    append_snapshot_prometheus(fixture_snapshot("mig"), dcgm, d);
    const std::size_t mig = d.find(",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\"} ");
    ASSERT_NE(mig, std::string::npos) << d;
    const std::size_t line = d.rfind('\n', mig) + 1;
    EXPECT_EQ(d.substr(line, 20), "DCGM_FI_DEV_FB_USED{");
    EXPECT_NE(d.substr(mig).find("} 33792\n"), std::string::npos);  // 35433480192 bytes in MiB
    EXPECT_NE(d.find("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{gpu=\"0\""), std::string::npos);
    EXPECT_NE(d.find("DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu=\"0\""), std::string::npos);
    // No fan on an SXM board: no series (absent, not 0). The throttled A6000 has one.
    EXPECT_EQ(t.find("baton_gpu_fan_speed_ratio{"), std::string::npos);
    std::string fan;
    append_snapshot_prometheus(fixture_snapshot("throttled"), PrometheusOptions{}, fan);
    EXPECT_NE(fan.find("baton_gpu_fan_speed_ratio{gpu=\"0\",uuid=\"GPU-tttttttt-0000-4000-8000-000000000000\"} 1\n"),
              std::string::npos)
        << fan;
    EXPECT_NE(fan.find("baton_gpu_decoder_utilization_ratio{gpu=\"0\""), std::string::npos);
    EXPECT_NE(fan.find("baton_gpu_remapping_pending{gpu=\"0\",uuid=\"GPU-tttttttt-0000-4000-8000-000000000000\"} 1\n"),
              std::string::npos);
}

TEST(SnapshotPrometheus, JobsAreInfoSeriesToJoinOn) {
    Snapshot snap = fixture_snapshot("eight-busy");
    // A second job on GPU 2: a notebook service whose process uses it.
    snap.processes[0].job = JobRef{JobKind::service, "jupyter.service", "", "", ""};
    JobInfo nb;
    nb.kind = JobKind::service;
    nb.id = nb.name = "jupyter.service";
    nb.label = "service:jupyter.service";
    nb.user = "bob\"x";
    nb.pids = {snap.processes[0].pid};
    snap.jobs.push_back(nb);
    snap.processes[0].cpu_percent = 500;
    std::string t;
    append_snapshot_prometheus(snap, PrometheusOptions{}, t);
    EXPECT_TRUE(has(t,
                    "baton_job_info{job_id=\"slurm:4242\",kind=\"slurm\",name=\"resnet\",user=\"alice\","
                    "account=\"vision\",partition=\"gpu\"} 1"))
        << t;
    EXPECT_TRUE(has(t, "baton_job_processes{job_id=\"slurm:4242\"} 3"));
    EXPECT_TRUE(has(t, "baton_job_allocated_cpus{job_id=\"slurm:4242\"} 8"));
    EXPECT_TRUE(has(t, "baton_job_allocated_memory_bytes{job_id=\"slurm:4242\"} 67108864000"));
    EXPECT_TRUE(has(t, "baton_job_allocated_gpus{job_id=\"slurm:4242\"} 2"));
    // Allocated the GPUs of minor numbers 0 and 1, no process of the job on them (NVML's pids are
    // not the fixture's).
    unsigned other = 0;
    for (const GpuInfo& g : snap.gpus) {
        if (!g.minor_number || *g.minor_number >= 2) {
            other = g.index;
            continue;
        }
        EXPECT_TRUE(has(t, "baton_gpu_job_info{gpu=\"" + std::to_string(g.index) + "\",uuid=\"" + g.uuid +
                               "\",job_id=\"slurm:4242\",kind=\"slurm\",name=\"resnet\",user=\"alice\","
                               "account=\"vision\",partition=\"gpu\",in_use=\"false\"} 1"))
            << g.index;
    }
    snap.jobs.back().gpus = {other};
    t.clear();
    append_snapshot_prometheus(snap, PrometheusOptions{}, t);
    EXPECT_TRUE(has(t, "baton_gpu_job_info{gpu=\"" + std::to_string(other) + "\",uuid=\"" + snap.gpus[other].uuid +
                           "\",job_id=\"service:jupyter.service\",kind=\"service\",name=\"jupyter.service\","
                           "user=\"bob\\\"x\",in_use=\"true\"} 1"))
        << t;
    EXPECT_EQ(count_samples(t, "baton_gpu_job_info"), 3);
    // Processes with series of their own say their job; the rest do not multiply series.
    EXPECT_TRUE(has(t, "baton_process_job_info{pid=\"100\",job_id=\"slurm:4242\",kind=\"slurm\",step=\"0\"} 1"));
    EXPECT_TRUE(has(t, "baton_process_job_info{pid=\"" + std::to_string(snap.processes[0].pid) +
                           "\",job_id=\"service:jupyter.service\",kind=\"service\"} 1"));
    PrometheusOptions one;
    one.process_series = 1;
    std::string few;
    append_snapshot_prometheus(snap, one, few);
    EXPECT_EQ(count_samples(few, "baton_process_job_info"), 1);
    // promtool takes the families.
    const auto [status, lines] = promtool_check(t);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(lines, std::vector<std::string>{});
}

// jobstats' families, as its exporters name them: each Slurm job's cgroup totals with step="" and
// task="", the GPUs with the job on each by minor number, what the cgroup lacks filled from Slurm's
// allocation, and nothing for a job with no cgroup reading or a job that is not Slurm's.
TEST(SnapshotPrometheus, JobstatsCompatFamilies) {
    Snapshot snap = fixture_snapshot("eight-busy");
    ASSERT_FALSE(snap.jobs.empty());
    JobInfo nb;  // a notebook service on a GPU: not a Slurm job, no cgroup_* series
    nb.kind = JobKind::service;
    nb.id = nb.name = "jupyter.service";
    nb.label = "service:jupyter.service";
    snap.jobs.push_back(nb);
    std::map<std::string, os::JobCgroupUsage> cgroups;
    os::JobCgroupUsage& u = cgroups["4242"];
    u.cpu_seconds = 7200.5;
    u.cpu_user_seconds = 7000;
    u.cpu_system_seconds = 200.5;
    u.memory_used_bytes = 3u << 30;
    u.memory_rss_bytes = 2u << 30;
    u.memory_shmem_bytes = 1u << 20;
    cgroups["999"].cpu_seconds = 1;  // a job the snapshot does not have
    Exposition e;
    append_jobstats_compat(snap, cgroups, e);
    std::string t;
    e.write(t);
    const std::string l = "{jobid=\"4242\",step=\"\",task=\"\"}";
    EXPECT_TRUE(has(t, "cgroup_cpu_total_seconds" + l + " 7200.5")) << t;
    EXPECT_TRUE(has(t, "cgroup_cpu_system_seconds" + l + " 200.5"));
    EXPECT_TRUE(has(t, "cgroup_memory_rss_bytes" + l + " 2147483648"));
    EXPECT_TRUE(has(t, "cgroup_memory_shmem_bytes" + l + " 1048576"));
    // No cpuset and no limit in the cgroup: Slurm's 8 cores and 62.5 GiB.
    EXPECT_TRUE(has(t, "cgroup_cpus" + l + " 8"));
    EXPECT_TRUE(has(t, "cgroup_memory_total_bytes" + l + " 67108864000"));
    EXPECT_TRUE(has(t, "cgroup_uid{jobid=\"4242\"} 1000")) << t;
    EXPECT_EQ(t.find("jobid=\"999\""), std::string::npos);
    EXPECT_EQ(t.find("jupyter"), std::string::npos);
    EXPECT_EQ(count_samples(t, "cgroup_cpus"), 1);
    // The cgroup's own cpuset and limit win over the allocation.
    u.cpus = 4;
    u.memory_limit_bytes = 1u << 30;
    Exposition e2;
    append_jobstats_compat(snap, cgroups, e2);
    std::string t2;
    e2.write(t2);
    EXPECT_TRUE(has(t2, "cgroup_cpus" + l + " 4"));
    EXPECT_TRUE(has(t2, "cgroup_memory_total_bytes" + l + " 1073741824"));
    // The GPUs: every one, jobid on those allocated to the job (minor numbers 0 and 1).
    EXPECT_EQ(count_samples(t, "nvidia_gpu_memory_total_bytes"), static_cast<int>(snap.gpus.size()));
    EXPECT_TRUE(has(t, "nvidia_gpu_num_devices " + std::to_string(snap.gpus.size())));
    int with_job = 0;
    for (const GpuInfo& g : snap.gpus) {
        const bool mine = g.minor_number && *g.minor_number < 2;
        const std::string labels = "{ordinal=\"" + std::to_string(g.index) + "\",minor_number=\"" +
                                   std::to_string(*g.minor_number) + "\",uuid=\"" + g.uuid + "\",name=\"" + g.name +
                                   "\",jobid=\"" + (mine ? "4242" : "") + "\",userid=\"" + (mine ? "1000" : "") + "\"}";
        EXPECT_TRUE(has(t, "nvidia_gpu_memory_total_bytes" + labels + " " + std::to_string(*g.memory_total_bytes)))
            << labels << "\n"
            << t;
        if (g.utilization_percent) {
            std::ostringstream v;
            v << *g.utilization_percent;
            EXPECT_TRUE(has(t, "nvidia_gpu_duty_cycle" + labels + " " + v.str())) << labels;
        }
        if (mine) {
            ++with_job;
            EXPECT_TRUE(has(t, "nvidia_gpu_jobId" + labels + " 4242"));
            EXPECT_TRUE(has(t, "nvidia_gpu_jobUid" + labels + " 1000"));
        }
    }
    EXPECT_EQ(with_job, 2);
    EXPECT_EQ(count_samples(t, "nvidia_gpu_jobId"), 2);
    // promtool parses the families; its linter flags the exporter's camel-case nvidia_gpu_jobId and
    // jobUid alone (exit 3), kept on purpose: jobstats queries them by those names.
    const auto [status, lines] = promtool_check(t);
    EXPECT_EQ(status, 3);
    for (const std::string& line : lines) {
        EXPECT_TRUE(line.rfind("nvidia_gpu_jobId ", 0) == 0 || line.rfind("nvidia_gpu_jobUid ", 0) == 0) << line;
        EXPECT_NE(line.find("'snake_case' not 'camelCase'"), std::string::npos) << line;
    }
    EXPECT_EQ(lines.size(), 2u);
}

// A family is written once, in the order first declared, with its HELP and TYPE; a sample declares
// its family when nothing did before; a family with no sample prints nothing; a value that is not
// finite is no sample.
TEST(SnapshotPrometheus, FamiliesOnceInTheirOrderAndOnlyWithSamples) {
    constexpr MetricFamily kFirst{"first_metric", "gauge", "The first."};
    constexpr MetricFamily kSecond{"second_total", "counter", "The second."};
    constexpr MetricFamily kSilent{"silent_metric", "gauge", "Never sampled."};
    Exposition e;
    e.family(kFirst);
    e.family(kSilent);
    e.sample(kSecond, {{"k", "v"}}, 2);  // declared by its sample
    e.sample(kFirst, {}, 1.5);
    e.sample(kFirst, {}, std::nan(""));
    e.family(MetricFamily{"first_metric", "counter", "Declared again: the first declaration stays."});
    e.sample(kFirst, {{"a", "x\"y"}}, 3);
    std::string t;
    e.write(t);
    EXPECT_EQ(t,
              "# HELP first_metric The first.\n# TYPE first_metric gauge\nfirst_metric 1.5\n"
              "first_metric{a=\"x\\\"y\"} 3\n"
              "# HELP second_total The second.\n# TYPE second_total counter\nsecond_total{k=\"v\"} 2\n");
}
