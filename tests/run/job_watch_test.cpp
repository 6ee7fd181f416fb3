// JobWatch without a process of its own (as the queue will drive it, from the agent's sampler):
// snapshots in, the job's figures, findings and record out. A GPU finding waits until the GPU is
// the job's; a failure in the output is found once; the record reaches the history with the end.
#include <gtest/gtest.h>

#include <algorithm>

#include "run/job_watch.hpp"
#include "store/history.hpp"
#include "store/history_runs.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::store;
using namespace baton::run;

namespace {

using baton::test::GiB;

// A box with two GPUs: GPU1 idle at 97 % memory (gpu_memory_high), the job (pid 500 and worker 501)
// on GPU0 from `t` = 3 on.
Snapshot at(int t, bool job_on_gpu1) {
    Snapshot s;
    s.time_unix_ms = 1'800'000'000'000 + t * 1000;
    s.monotonic_seconds = 1000.0 + t;
    s.interval_seconds = 1;
    s.gpu_status = "ok";
    s.gpu_state = GpuState::ok;
    s.host.cpu_count = 8;
    s.memory.total_bytes = 64 * GiB;
    s.memory.used_bytes = 16 * GiB;
    s.cpu.total.utilization_percent = 30;
    for (unsigned i = 0; i < 2; ++i) {
        GpuInfo g;
        g.index = i;
        g.uuid = "GPU-" + std::to_string(i);
        g.name = "Fake";
        g.memory_total_bytes = 80 * GiB;
        g.memory_used_bytes = i == 1 ? 78 * GiB : 40 * GiB;
        g.utilization_percent = i == 1 ? 0 : 90;
        s.gpus.push_back(g);
    }
    ProcessInfo trainer, worker, other;
    trainer.pid = 500;
    trainer.ppid = 1;
    trainer.name = "python3";
    trainer.cpu_percent = 100;
    trainer.rss_bytes = 2 * GiB;
    worker.pid = 501;
    worker.ppid = 500;
    worker.name = "python3";
    worker.cpu_percent = 50;
    worker.rss_bytes = GiB;
    other.pid = 900;
    other.ppid = 1;
    other.name = "other";
    other.cpu_percent = 0;
    s.processes = {trainer, worker, other};
    GpuProcess gp;
    gp.pid = 900;
    gp.local_pid = 900;
    gp.used_memory_bytes = 78 * GiB;
    s.gpus[1].processes.push_back(gp);
    s.processes[2].gpu_indices = {1};
    GpuProcess mine;
    mine.pid = 500;
    mine.local_pid = 500;
    mine.used_memory_bytes = 40 * GiB;
    s.gpus[0].processes.push_back(mine);
    s.processes[0].gpu_indices = {0};
    if (job_on_gpu1) {
        s.gpus[1].processes.push_back(mine);
        s.processes[0].gpu_indices.push_back(1);
    }
    return s;
}

}  // namespace

TEST(JobWatch, FiguresFindingsAndRecordFromSnapshotsAlone) {
    test::TempDir d;
    JobWatchOptions o;
    o.name = "train";
    o.argv = {"python3", "train.py"};
    o.cwd = "/work";
    o.db_path = d.path() + "/h.db";
    JobWatch w(o, 500);
    diagnose::Window window;
    bool gpu1_finding_before = false;
    for (int t = 0; t < 8; ++t) {
        window.push_back(at(t, t >= 5));
        for (const diagnose::Finding& f : w.sample(window)) gpu1_finding_before |= f.subject == "gpu:1" && t < 5;
    }
    EXPECT_FALSE(gpu1_finding_before) << "GPU1 was not the job's before t=5";
    bool gpu1_finding = false;
    for (const diagnose::Finding& f : w.stats().findings) gpu1_finding |= f.subject == "gpu:1";
    EXPECT_TRUE(gpu1_finding) << "GPU1's finding, held until the job used GPU1, is released then";
    EXPECT_EQ(w.stats().samples, 8u);
    EXPECT_DOUBLE_EQ(w.stats().job_cpu_peak, 150);  // the trainer and its worker
    EXPECT_EQ(w.stats().job_rss_peak, 3 * GiB);
    EXPECT_EQ(w.stats().job_processes_peak, 2u);
    ASSERT_EQ(w.stats().gpus.size(), 2u) << "GPU0 from the start, GPU1 once the job used it";
    EXPECT_EQ(w.stats().gpus[0].peak_memory_bytes, 40 * GiB);

    // A failure in the output is found once, however it is cut.
    EXPECT_TRUE(w.read_output("epoch 1\n").empty());
    std::vector<diagnose::Finding> oom = w.read_output("torch.OutOfMemoryError: CUDA out of memo");
    oom = w.read_output("ry. Tried to allocate 20.00 MiB\n");
    ASSERT_EQ(oom.size(), 1u);
    EXPECT_EQ(oom[0].rule, "cuda_oom");
    EXPECT_TRUE(w.read_output("torch.OutOfMemoryError: CUDA out of memory.\n").empty());
    w.read_events(
        {"not json", R"({"type":"step","pid":500,"rank":0,"step":1,"step_ms":100,"wait_ms":5,"t":1800000007000})"});
    EXPECT_EQ(w.stats().events_rejected, 1u);
    // The hook's word at exit on the events it dropped after its last step that got through.
    w.read_events({R"({"type":"dropped","pid":500,"t":1800000007100,"dropped":7})"});
    EXPECT_EQ(w.stats().events_rejected, 1u);

    const RunStats s = w.finish(1, 0, 8.0, 0);
    EXPECT_EQ(s.exit_status, 1);
    EXPECT_EQ(s.events_dropped, 7u);
    ASSERT_NE(s.recording.run_id, 0);
    EXPECT_TRUE(s.recording.complete()) << s.recording.error;
    auto h = History::open(o.db_path, HistoryAccess::read);
    ASSERT_TRUE(h.ok()) << h.error().message;
    auto run = h->run_reads().load_run(s.recording.run_id);
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(run->run.name, "train");
    EXPECT_EQ(run->run.cwd, "/work");
    EXPECT_EQ(run->run.exit_status, 1);
    EXPECT_EQ(run->samples.size(), 8u);
    EXPECT_EQ(run->steps.size(), 1u);
    bool recorded_oom = false;
    for (const RecordedFinding& f : run->findings) recorded_oom |= f.rule == "cuda_oom";
    EXPECT_TRUE(recorded_oom);
}

// A run's disk rates count each byte once: LVM's dm-0 over vda, md0 over sda and sdb, a loop
// device and zram are left out, their members (or nothing, for zram) counted.
TEST(JobWatch, DiskRatesCountStackedDevicesOnce) {
    test::TempDir d;
    JobWatchOptions o;
    o.name = "train";
    o.argv = {"python3", "train.py"};
    o.db_path = d.path() + "/h.db";
    JobWatch w(o, 500);
    diagnose::Window window;
    for (int t = 0; t < 3; ++t) {
        Snapshot s = at(t, false);
        auto disk = [&](const char* name, double read_mb, double write_mb, bool stacked) {
            DiskStats x;
            x.name = name;
            x.read_bytes_per_second = read_mb * 1e6;
            x.write_bytes_per_second = write_mb * 1e6;
            x.stacked = stacked;
            s.disks.push_back(x);
        };
        disk("vda", 100, 10, false);
        disk("dm-0", 100, 10, true);  // the same bytes, once more
        disk("sda", 20, 5, false);
        disk("sdb", 20, 5, false);
        disk("md0", 40, 5, true);  // RAID 1 over sda and sdb
        disk("loop0", 30, 0, true);
        disk("zram0", 50, 50, false);
        window.push_back(s);
        w.sample(window);
    }
    const RunStats s = w.finish(0, 0, 3.0, 0);
    auto h = History::open(o.db_path, HistoryAccess::read);
    ASSERT_TRUE(h.ok()) << h.error().message;
    auto run = h->run_reads().load_run(s.recording.run_id);
    ASSERT_TRUE(run.ok()) << run.error().message;
    ASSERT_EQ(run->samples.size(), 3u);
    for (const RunSample& r : run->samples) {
        EXPECT_FLOAT_EQ(static_cast<float>(r.disk_read_bytes_per_second.value_or(-1)), 140e6f);
        EXPECT_FLOAT_EQ(static_cast<float>(r.disk_write_bytes_per_second.value_or(-1)), 20e6f);
    }
}

// On a GPU in MIG mode, a MIG device's memory finding is the job's only when the job runs on that
// device: another user's full slice of the same GPU is not the job's trouble.
TEST(JobWatch, AMigDevicesFindingIsTheJobsOnlyWhereTheJobRuns) {
    for (const unsigned job_instance : {1u, 2u}) {
        JobWatchOptions o;
        o.name = "train";
        o.argv = {"python3", "train.py"};
        JobWatch w(o, 500);
        diagnose::Window window;
        std::vector<diagnose::Finding> found;
        for (int t = 0; t < 31; ++t) {
            Snapshot s = at(t, false);
            GpuInfo& g = s.gpus[0];
            g.mig_mode = true;
            for (unsigned gi : {1u, 2u}) {
                MigInstance m;
                m.gpu_instance_id = gi;
                m.name = "Fake MIG 3g.40gb";
                m.memory_total_bytes = 40 * GiB;
                m.memory_used_bytes = gi == 2 ? 39 * GiB : 20 * GiB;  // GI 2 at 97.5 %
                g.mig_instances.push_back(m);
            }
            g.processes[0].gpu_instance_id = job_instance;  // the job's process (pid 500)
            window.push_back(s);
            for (diagnose::Finding& f : w.sample(window)) found.push_back(f);
        }
        const bool near_oom = std::any_of(found.begin(), found.end(), [](const diagnose::Finding& f) {
            return f.rule == "gpu_memory_near_oom" && f.subject == "gpu:0/mig:2";
        });
        EXPECT_EQ(near_oom, job_instance == 2) << "the job on GI " << job_instance;
        EXPECT_FALSE(std::any_of(found.begin(), found.end(), [](const diagnose::Finding& f) {
            return f.subject == "gpu:0/mig:1" && f.rule.rfind("gpu_memory", 0) == 0;
        }));
    }
}
