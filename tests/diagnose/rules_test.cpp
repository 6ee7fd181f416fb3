// Each diagnosis rule on synthetic windows: it fires on the faulty window and stays silent on
// its healthy twin.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "diagnose/indicators.hpp"
#include "diagnose/rules.hpp"

using namespace baton;
using namespace baton::diagnose;

namespace {

constexpr std::int64_t kStart = 1764400000000;  // ms

ProcessInfo proc(std::uint32_t pid, std::uint32_t ppid, const std::string& name, double cpu) {
    ProcessInfo p;
    p.pid = pid;
    p.ppid = ppid;
    p.name = name;
    p.command = name;
    p.user = "alice";
    p.cpu_percent = cpu;
    p.start_time_ms = kStart - 3600 * 1000;  // an hour old
    return p;
}

GpuInfo gpu(unsigned index, double util, double mem_percent) {
    GpuInfo g;
    g.index = index;
    g.name = "NVIDIA H200";
    g.utilization_percent = util;
    g.memory_total_bytes = 100ull << 30;
    g.memory_used_bytes = static_cast<std::uint64_t>(mem_percent / 100.0 * static_cast<double>(100ull << 30));
    return g;
}

// A healthy 8-core box training on GPU0: trainer 100 with 4 workers, GPU 90 % busy, memory 75 %.
Snapshot healthy(int i) {
    Snapshot s;
    s.time_unix_ms = kStart + i * 1000;
    s.host.cpu_count = 8;
    s.cpu.total.utilization_percent = 50;
    s.cpu.total.iowait_percent = 0.5;
    s.cpu.runnable_tasks = 5;
    s.swap.in_bytes_per_second = 0;
    s.swap.out_bytes_per_second = 0;
    s.memory.shm_total_bytes = 32ull << 30;
    s.memory.shm_used_bytes = 1ull << 30;
    s.pressure.available = true;
    s.pressure.memory.full = PressureLine{0.0, 0, 0, 0};
    DiskStats d;
    d.name = "nvme0n1";
    d.busy_percent = 10;
    s.disks.push_back(d);
    s.processes = {proc(1, 0, "systemd", 0),     proc(50, 1, "bash", 0),       proc(100, 50, "python", 60),
                   proc(101, 100, "python", 50), proc(102, 100, "python", 50), proc(103, 100, "python", 50),
                   proc(104, 100, "python", 50)};
    GpuInfo g = gpu(0, 90, 75);
    g.temperature_celsius = 60;
    g.pcie_generation = 5;
    g.pcie_generation_max = 5;
    g.pcie_width = 16;
    g.pcie_width_max = 16;
    g.ecc_uncorrected_volatile = 0;
    GpuProcess gp;
    gp.pid = 100;
    gp.used_memory_bytes = 70ull << 30;
    gp.sm_utilization_percent = 85;
    g.processes.push_back(gp);
    s.gpus.push_back(g);
    return s;
}

// 31 snapshots a second apart (a full 30 s window), each changed by `edit`.
Window window(const std::function<void(Snapshot&, int)>& edit = nullptr) {
    Window w;
    for (int i = 0; i <= 30; ++i) {
        Snapshot s = healthy(i);
        if (edit) edit(s, i);
        w.push_back(std::move(s));
    }
    return w;
}

std::vector<std::string> rules_of(const std::vector<Finding>& f) {
    std::vector<std::string> ids;
    for (const Finding& x : f) ids.push_back(x.rule);
    std::sort(ids.begin(), ids.end());
    return ids;
}

const Finding* find_rule(const std::vector<Finding>& f, const std::string& rule) {
    for (const Finding& x : f)
        if (x.rule == rule) return &x;
    return nullptr;
}

const Thresholds kT;

}  // namespace

TEST(Rules, HealthyWindowHasNoFindings) {
    EXPECT_TRUE(diagnose::diagnose(window(), kT).empty())
        << ::testing::PrintToString(rules_of(diagnose::diagnose(window(), kT)));
    EXPECT_TRUE(diagnose::diagnose(Window{}, kT).empty());
}

TEST(Rules, CpuLoadHighNeedsToBeSustained) {
    auto f = diagnose::diagnose(window([](Snapshot& s, int) { s.cpu.total.utilization_percent = 92; }), kT);
    const Finding* x = find_rule(f, "cpu_load_high");
    ASSERT_NE(x, nullptr);
    EXPECT_EQ(x->severity, Severity::warning);
    EXPECT_EQ(x->subject, "host");
    EXPECT_EQ(x->doc, "docs/findings.md#cpu_load_high");
    ASSERT_EQ(x->evidence.size(), 1u);
    EXPECT_DOUBLE_EQ(*x->evidence[0].average, 92);
    EXPECT_DOUBLE_EQ(*x->evidence[0].breach_share, 1.0);
    EXPECT_EQ(x->evidence[0].threshold, "> 80");
    // Busy in only a third of the samples: not sustained.
    f = diagnose::diagnose(window([](Snapshot& s, int i) { s.cpu.total.utilization_percent = i % 3 == 0 ? 95 : 40; }),
                           kT);
    EXPECT_EQ(find_rule(f, "cpu_load_high"), nullptr);
}

TEST(Rules, SwapActiveAndThrash) {
    auto f = diagnose::diagnose(window([](Snapshot& s, int) { s.swap.out_bytes_per_second = 3e6; }), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"swap_active"}));
    f = diagnose::diagnose(window([](Snapshot& s, int) {
                               s.swap.in_bytes_per_second = 2e6;
                               s.swap.out_bytes_per_second = 2e6;
                           }),
                           kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"swap_active", "swap_thrash"}));
    EXPECT_EQ(f[0].rule, "swap_thrash");  // critical first
    EXPECT_EQ(f[0].severity, Severity::critical);
}

TEST(Rules, IoWaitHighOnTheAverage) {
    auto f = diagnose::diagnose(window([](Snapshot& s, int) { s.cpu.total.iowait_percent = 8; }), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"io_wait_high"}));
    f = diagnose::diagnose(window([](Snapshot& s, int) { s.cpu.total.iowait_percent = 4; }), kT);
    EXPECT_TRUE(f.empty());
}

TEST(Rules, InputBoundWhenTheJobsCpusAreSaturated) {
    // GPU at 30 %, trainer + 4 workers each near 100 % of a core: feed the GPU faster.
    auto starved = [](Snapshot& s, int) {
        s.gpus[0].utilization_percent = 30;
        for (ProcessInfo& p : s.processes)
            if (p.pid >= 100) p.cpu_percent = 98;
    };
    auto f = diagnose::diagnose(window(starved), kT);
    const Finding* x = find_rule(f, "input_bound");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(x->subject, "gpu:0");
    // 8 cores for one GPU: 7 workers (one core for the trainer); it has 4.
    EXPECT_NE(x->recommendation.find("num_workers=7"), std::string::npos) << x->recommendation;
    ASSERT_TRUE(x->snippet);
    EXPECT_NE(x->snippet->find("num_workers=7, pin_memory=True, persistent_workers=True"), std::string::npos);
    // Healthy twin: the same busy workers, but the GPU is busy too.
    f = diagnose::diagnose(window([](Snapshot& s, int) {
                               for (ProcessInfo& p : s.processes)
                                   if (p.pid >= 100) p.cpu_percent = 98;
                           }),
                           kT);
    EXPECT_EQ(find_rule(f, "input_bound"), nullptr);
    // Starved GPU but idle CPUs: not input bound (something else, e.g. synchronisation).
    f = diagnose::diagnose(window([](Snapshot& s, int) { s.gpus[0].utilization_percent = 30; }), kT);
    EXPECT_EQ(find_rule(f, "input_bound"), nullptr);
}

TEST(Rules, InputBoundCountsTheWorkersNotTheWaitingTrainer) {
    // As on an H200: the workers near a full core each, the trainer mostly waiting for batches, and an
    // idle helper process (a logger's service) under the trainer too.
    auto starved = [](Snapshot& s, int) {
        s.gpus[0].utilization_percent = 3;
        for (ProcessInfo& p : s.processes)
            if (p.pid >= 100) p.cpu_percent = p.pid == 100 ? 20 : p.pid <= 102 ? 96 : 1;
    };
    auto f = diagnose::diagnose(window(starved), kT);
    const Finding* x = find_rule(f, "input_bound");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_NE(x->summary.find("keeps its CPUs 96 % busy"), std::string::npos) << x->summary;
    auto without_workers = [](Snapshot& s) {
        s.processes.erase(
            std::remove_if(s.processes.begin(), s.processes.end(), [](const ProcessInfo& p) { return p.pid > 100; }),
            s.processes.end());
    };
    // The trainer alone (num_workers=0) at `cpu` % of a core, its GPU starved.
    auto alone_at = [&](double cpu) {
        return [&, cpu](Snapshot& s, int) {
            s.gpus[0].utilization_percent = 3;
            without_workers(s);
            for (ProcessInfo& p : s.processes)
                if (p.pid == 100) p.cpu_percent = cpu;
        };
    };
    // The same trainer with num_workers=0: it loads its data itself, at 20 %: not input bound ...
    f = diagnose::diagnose(window(alone_at(20)), kT);
    EXPECT_EQ(find_rule(f, "input_bound"), nullptr);
    // Workers that exit at the end of the window (the end of a run) still count in the advice.
    f = diagnose::diagnose(window([&](Snapshot& s, int i) {
                               starved(s, i);
                               if (i >= 28) without_workers(s);
                           }),
                           kT);
    x = find_rule(f, "input_bound");
    ASSERT_NE(x, nullptr);
    EXPECT_NE(x->recommendation.find("its 4 DataLoader worker(s)"), std::string::npos) << x->recommendation;
    // ... and a trainer without workers at a full core is input bound too.
    f = diagnose::diagnose(window(alone_at(99)), kT);
    EXPECT_NE(find_rule(f, "input_bound"), nullptr);
}

TEST(Rules, InputBoundAtTheCpuLimitSuggestsGpuAugmentation) {
    auto f = diagnose::diagnose(window([](Snapshot& s, int) {
                                    s.gpus[0].utilization_percent = 25;
                                    s.cpu.total.utilization_percent = 97;
                                    for (std::uint32_t pid = 105; pid < 112; ++pid)
                                        s.processes.push_back(proc(pid, 100, "python", 99));
                                }),
                                kT);
    const Finding* x = find_rule(f, "input_bound");
    ASSERT_NE(x, nullptr);
    EXPECT_NE(x->recommendation.find("move augmentation to the GPU"), std::string::npos) << x->recommendation;
}

TEST(Rules, IoBoundNeedsIoWaitAndABusyDisk) {
    auto io = [](Snapshot& s, int) {
        s.gpus[0].utilization_percent = 20;
        s.cpu.total.iowait_percent = 30;
        s.disks[0].busy_percent = 98;
    };
    auto f = diagnose::diagnose(window(io), kT);
    const Finding* x = find_rule(f, "io_bound");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(x->subject, "disk:nvme0n1");
    EXPECT_NE(find_rule(f, "io_wait_high"), nullptr);
    f = diagnose::diagnose(window([](Snapshot& s, int) {
                               s.gpus[0].utilization_percent = 20;
                               s.cpu.total.iowait_percent = 30;
                           }),
                           kT);
    EXPECT_EQ(find_rule(f, "io_bound"), nullptr);  // no busy disk: the wait is elsewhere (network storage)
}

TEST(Rules, GpuMemoryHighAndNearOom) {
    auto f = diagnose::diagnose(window([](Snapshot& s, int) { s.gpus[0] = gpu(0, 90, 93); }), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"gpu_memory_high"}));
    f = diagnose::diagnose(window([](Snapshot& s, int) { s.gpus[0] = gpu(0, 90, 97); }), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"gpu_memory_high", "gpu_memory_near_oom"}));
    const Finding* x = find_rule(f, "gpu_memory_near_oom");
    EXPECT_EQ(x->severity, Severity::critical);
    ASSERT_TRUE(x->snippet);
    EXPECT_NE(x->snippet->find("GradScaler"), std::string::npos);
    EXPECT_NE(x->snippet->find("expandable_segments:True"), std::string::npos);
    // Rising from 86 % by 0.1 point a second: full in about 2 minutes -> a warning now.
    f = diagnose::diagnose(window([](Snapshot& s, int i) { s.gpus[0] = gpu(0, 90, 86 + 0.1 * i); }), kT);
    x = find_rule(f, "gpu_memory_near_oom");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(x->severity, Severity::warning);
    // Flat at 84 %: nothing.
    EXPECT_TRUE(diagnose::diagnose(window([](Snapshot& s, int) { s.gpus[0] = gpu(0, 90, 84); }), kT).empty());
}

// A GPU in MIG mode: each MIG device is judged by its own memory. The whole GPU at 50 % says nothing of
// a 2g.20gb slice at 97 %, whose process runs out at 20 GB; two compute instances of one GPU instance
// share its memory and are judged once; "room to grow" is not claimed for the GPU.
TEST(Rules, MigDevicesAreJudgedByTheirOwnMemory) {
    auto mig = [](Snapshot& s, int, double slice_percent) {
        GpuInfo g = gpu(0, 0, 50);
        g.utilization_percent.reset();  // NVML gives none in MIG mode
        g.name = "NVIDIA H100 80GB HBM3";
        g.mig_mode = true;
        auto add = [&](unsigned gi, unsigned ci, const char* profile, std::uint64_t total, double percent) {
            MigInstance m;
            m.gpu_instance_id = gi;
            m.compute_instance_id = ci;
            m.name = std::string("NVIDIA H100 80GB HBM3 MIG ") + profile;
            m.memory_total_bytes = total;
            m.memory_used_bytes = static_cast<std::uint64_t>(static_cast<double>(total) * percent / 100);
            g.mig_instances.push_back(m);
        };
        add(2, 0, "3g.40gb", 40ull << 30, 40);
        add(3, 0, "2g.20gb", 20ull << 30, slice_percent);
        add(3, 1, "2g.20gb", 20ull << 30, slice_percent);  // a second compute instance: the same memory
        s.gpus[0] = g;
    };
    auto f = diagnose::diagnose(window([&](Snapshot& s, int i) { mig(s, i, 97); }), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"gpu_memory_high", "gpu_memory_near_oom"}));
    for (const Finding& x : f) {
        EXPECT_EQ(x.subject, "gpu:0/mig:3") << x.rule;
        EXPECT_NE(x.summary.find("GPU0 MIG 2g.20gb (GI 3) memory"), std::string::npos) << x.summary;
    }
    EXPECT_EQ(find_rule(f, "gpu_memory_near_oom")->severity, Severity::critical);
    // The slice at 50 %, like the whole GPU: nothing.
    EXPECT_TRUE(diagnose::diagnose(window([&](Snapshot& s, int i) { mig(s, i, 50); }), kT).empty());
    // The indicator table: one row per GPU instance, none for the GPU as a whole.
    const Window w = window([&](Snapshot& s, int i) { mig(s, i, 97); });
    std::vector<std::pair<std::string, Level>> rows;
    for (const IndicatorSummary& s : summarize_indicators(w, kT))
        if (s.indicator == "gpu_memory") rows.emplace_back(s.subject, s.level);
    EXPECT_EQ(rows,
              (std::vector<std::pair<std::string, Level>>{{"gpu:0/mig:2", Level::low}, {"gpu:0/mig:3", Level::alarm}}));
    IndicatorWindow live(kT);
    for (const Snapshot& s : w) live.add(s);
    const std::vector<Breach> b = live.breaches();
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].subject, "gpu:0/mig:3");
    EXPECT_EQ(b[0].text, "GPU0 MIG 2g.20gb (GI 3) memory 97 % (> 90 %)");
    EXPECT_NEAR(judged_memory_percent(w.back().gpus[0]).value_or(0), 97, 0.01);
}

TEST(Rules, GpuUnderused) {
    auto f = diagnose::diagnose(window([](Snapshot& s, int) { s.gpus[0] = gpu(0, 95, 30); }), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"gpu_underused"}));
    EXPECT_EQ(f[0].severity, Severity::info);
    EXPECT_TRUE(diagnose::diagnose(window([](Snapshot& s, int) { s.gpus[0] = gpu(0, 50, 30); }), kT).empty());
}

TEST(Rules, GpuIdleHeldNamesTheProcess) {
    auto idle = [](Snapshot& s, int) {
        s.gpus[0].utilization_percent = 0;
        for (ProcessInfo& p : s.processes) p.cpu_percent = 0;
        s.gpus[0].processes[0].pid = 200;
        s.processes.push_back(proc(200, 50, "python", 0));
        s.processes.back().start_time_ms = kStart - 3 * 3600 * 1000;  // a three-hour-old notebook kernel
    };
    auto f = diagnose::diagnose(window(idle), kT);
    const Finding* x = find_rule(f, "gpu_idle_held");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(x->subject, "pid:200");
    EXPECT_NE(x->summary.find("user alice"), std::string::npos) << x->summary;
    // A young process (just started, still loading): not flagged.
    f = diagnose::diagnose(window([&](Snapshot& s, int i) {
                               idle(s, i);
                               s.processes.back().start_time_ms = kStart;
                           }),
                           kT);
    EXPECT_EQ(find_rule(f, "gpu_idle_held"), nullptr);
    // An old holder that works on the CPU while its GPU idles still keeps the memory from others: said.
    f = diagnose::diagnose(window([&](Snapshot& s, int i) {
                               idle(s, i);
                               s.processes.back().cpu_percent = 80;
                           }),
                           kT);
    x = find_rule(f, "gpu_idle_held");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_NE(x->summary.find("while the process works on the CPU (80 % of a core)"), std::string::npos) << x->summary;
    // ... but one whose GPU does a little work (3 %, as a real input-bound H200 read) is a slow trainer.
    f = diagnose::diagnose(window([&](Snapshot& s, int i) {
                               idle(s, i);
                               s.gpus[0].utilization_percent = 3;
                               s.processes.back().cpu_percent = 80;
                           }),
                           kT);
    EXPECT_EQ(find_rule(f, "gpu_idle_held"), nullptr);
}

// A notebook kernel holding 12 GB on a GPU at 0 % (and 0 % SM) for the whole window while it runs
// pandas on one core is not input-bound: a GPU that does no work is not starved. The held memory is
// gpu_idle_held's once the kernel is old enough.
TEST(Rules, InputBoundOnlyWhereTheGpuIsFed) {
    auto notebook = [](Snapshot& s, int) {
        s.gpus[0].utilization_percent = 0;
        s.gpus[0].sm_activity_percent = 0;
        s.gpus[0].memory_used_bytes = 12ull << 30;
        s.gpus[0].processes[0].pid = 300;
        s.gpus[0].processes[0].used_memory_bytes = 12ull << 30;
        s.gpus[0].processes[0].sm_utilization_percent = 0;
        for (ProcessInfo& p : s.processes) p.cpu_percent = 0;
        s.processes.push_back(proc(300, 50, "python", 100));  // ipykernel: pandas on one core
        s.processes.back().start_time_ms = kStart - 2 * 3600 * 1000;
        s.cpu.total.utilization_percent = 100.0 / 8;
    };
    auto f = diagnose::diagnose(window(notebook), kT);
    EXPECT_EQ(find_rule(f, "input_bound"), nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(find_rule(f, "io_bound"), nullptr);
    const Finding* held = find_rule(f, "gpu_idle_held");
    ASSERT_NE(held, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(held->subject, "pid:300");
    // The same box where the GPU works in bursts (SM activity in a third of the samples) while the one
    // core feeding it is saturated: input-bound.
    f = diagnose::diagnose(window([&](Snapshot& s, int i) {
                               notebook(s, i);
                               if (i % 3 == 0) {
                                   s.gpus[0].utilization_percent = 40;
                                   s.gpus[0].sm_activity_percent = 30;
                               }
                           }),
                           kT);
    EXPECT_NE(find_rule(f, "input_bound"), nullptr) << ::testing::PrintToString(rules_of(f));
}

TEST(Rules, GpuContentionNeedsSeparateJobs) {
    auto shared = [](Snapshot& s, int) {
        s.processes.push_back(proc(60, 1, "sshd", 0));
        s.processes.push_back(proc(61, 60, "bash", 0));
        s.processes.push_back(proc(300, 61, "python", 90));  // bob's job from another shell
        GpuProcess gp;
        gp.pid = 300;
        gp.used_memory_bytes = 5ull << 30;
        gp.sm_utilization_percent = 40;
        s.gpus[0].processes.push_back(gp);
    };
    auto f = diagnose::diagnose(window(shared), kT);
    ASSERT_NE(find_rule(f, "gpu_contention"), nullptr) << ::testing::PrintToString(rules_of(f));
    // Two processes of one job (the trainer and one of its workers) on one GPU: fine.
    f = diagnose::diagnose(window([](Snapshot& s, int) {
                               GpuProcess gp;
                               gp.pid = 101;
                               gp.used_memory_bytes = 1ull << 30;
                               gp.sm_utilization_percent = 5;
                               s.gpus[0].processes.push_back(gp);
                           }),
                           kT);
    EXPECT_EQ(find_rule(f, "gpu_contention"), nullptr);
}

TEST(Rules, HostMemoryPressureAndOversubscription) {
    auto f = diagnose::diagnose(window([](Snapshot& s, int) {
                                    s.pressure.memory.full = PressureLine{12.0, 0, 0, 0};
                                }),
                                kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"host_memory_pressure"}));
    f = diagnose::diagnose(window([](Snapshot& s, int) { s.cpu.runnable_tasks = 40; }), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"cpu_oversubscribed"}));
    EXPECT_NE(f[0].snippet->find("OMP_NUM_THREADS"), std::string::npos);
}

TEST(Rules, ShmLow) {
    auto f = diagnose::diagnose(window([](Snapshot& s, int) { s.memory.shm_used_bytes = 31ull << 30; }), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"shm_low"}));
    EXPECT_EQ(f[0].severity, Severity::critical);
    f = diagnose::diagnose(window([](Snapshot& s, int) {
                               s.memory.shm_total_bytes = 64ull << 20;  // Docker's default
                               s.memory.shm_used_bytes = 1ull << 20;
                           }),
                           kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"shm_low"}));
    EXPECT_NE(f[0].snippet->find("--ipc=host"), std::string::npos);
}

TEST(Rules, ThrottledAndPcieOnlyWhileBusy) {
    auto hot = [](Snapshot& s, int) {
        s.gpus[0].throttle_reasons = std::vector<std::string>{"hw_thermal_slowdown"};
        s.gpus[0].temperature_celsius = 92;
    };
    auto f = diagnose::diagnose(window(hot), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"gpu_throttled"}));
    EXPECT_NE(f[0].recommendation.find("too hot"), std::string::npos);
    f = diagnose::diagnose(window([&](Snapshot& s, int i) {
                               hot(s, i);
                               s.gpus[0].utilization_percent = 0;  // idle GPUs may slow down: not a finding
                           }),
                           kT);
    EXPECT_EQ(find_rule(f, "gpu_throttled"), nullptr);
    f = diagnose::diagnose(window([](Snapshot& s, int) { s.gpus[0].pcie_width = 8; }), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"pcie_degraded"}));
    f = diagnose::diagnose(
        window([](Snapshot& s, int) { s.gpus[0].throttle_reasons = std::vector<std::string>{"gpu_idle"}; }), kT);
    EXPECT_TRUE(f.empty());
}

TEST(Rules, GpuMemoryLeakAndHardwareErrors) {
    auto leak = [](Snapshot& s, int i) {
        s.gpus[0].processes[0].used_memory_bytes = (40ull << 30) + static_cast<std::uint64_t>(i) * (64ull << 20);
    };
    auto f = diagnose::diagnose(window(leak), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"gpu_memory_leak"}));
    EXPECT_EQ(f[0].subject, "pid:100");
    // The same growth, but memory is given back regularly (a caching allocator's sawtooth): no leak.
    f = diagnose::diagnose(window([](Snapshot& s, int i) {
                               s.gpus[0].processes[0].used_memory_bytes =
                                   (40ull << 30) + static_cast<std::uint64_t>(i % 2 ? i : i / 2) * (64ull << 20);
                           }),
                           kT);
    EXPECT_EQ(find_rule(f, "gpu_memory_leak"), nullptr);
    // A trainer's start-up: one step up at the first training steps, then a plateau (seen on an H200),
    // whether the window ends on the step or after it.
    for (int step_at : {5, 12, 18}) {
        f = diagnose::diagnose(window([step_at](Snapshot& s, int i) {
                                   s.gpus[0].processes[0].used_memory_bytes =
                                       i < step_at ? (512ull << 20) : (1400ull << 20);
                               }),
                               kT);
        EXPECT_EQ(find_rule(f, "gpu_memory_leak"), nullptr) << "step at " << step_at;
    }
    // A trainer that appears mid-window: its context, then its first steps (also seen on an H200).
    f = diagnose::diagnose(window([](Snapshot& s, int i) {
                               if (i < 20) {
                                   s.gpus[0].processes.clear();
                                   return;
                               }
                               s.gpus[0].processes[0].used_memory_bytes =
                                   i == 20  ? 0ull
                                   : i < 25 ? (512ull << 20)
                                            : (512ull << 20) + (i - 24) * (200ull << 20);
                           }),
                           kT);
    EXPECT_EQ(find_rule(f, "gpu_memory_leak"), nullptr);
    f = diagnose::diagnose(window([](Snapshot& s, int i) { s.gpus[0].ecc_uncorrected_volatile = i >= 20 ? 2 : 0; }),
                           kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"gpu_hardware_errors"}));
    EXPECT_EQ(f[0].severity, Severity::critical);
}

TEST(Rules, DiskSpaceLowOnlyWhereAJobWrites) {
    auto fs = [](std::uint64_t avail, std::vector<std::uint32_t> writers) {
        FilesystemStats f;
        f.mount_point = "/data";
        f.device = "/dev/nvme1n1";
        f.fstype = "xfs";
        f.size_bytes = 1000ull << 30;
        f.free_bytes = avail;
        f.avail_bytes = avail;
        f.writer_pids = std::move(writers);
        return f;
    };
    // 30 GiB of 1000 left (3 %), the trainer's checkpoints land there: a warning.
    auto f = diagnose::diagnose(window([&](Snapshot& s, int) { s.filesystems = {fs(30ull << 30, {100})}; }), kT);
    ASSERT_EQ(rules_of(f), (std::vector<std::string>{"disk_space_low"}));
    EXPECT_EQ(f[0].subject, "fs:/data");
    EXPECT_EQ(f[0].severity, Severity::warning);
    EXPECT_EQ(f[0].summary, "/data has 30 GiB left (3.0 % of 1000 GiB); written by pid 100 (python)");
    ASSERT_TRUE(f[0].snippet);
    EXPECT_EQ(*f[0].snippet, "du -xh --max-depth=2 '/data' | sort -h | tail");
    // A mount point with a space and a newline: the command still names it, on one line.
    f = diagnose::diagnose(window([&](Snapshot& s, int) {
                               s.filesystems = {fs(30ull << 30, {100})};
                               s.filesystems[0].mount_point = "/mnt/my data\nx";
                           }),
                           kT);
    ASSERT_EQ(rules_of(f), (std::vector<std::string>{"disk_space_low"}));
    EXPECT_EQ(*f[0].snippet, "du -xh --max-depth=2 $'/mnt/my data\\nx' | sort -h | tail");
    // The same space where no job writes, or read-only, or no answer from statvfs: silent.
    EXPECT_TRUE(
        diagnose::diagnose(window([&](Snapshot& s, int) { s.filesystems = {fs(30ull << 30, {})}; }), kT).empty());
    EXPECT_TRUE(diagnose::diagnose(window([&](Snapshot& s, int) {
                                       s.filesystems = {fs(30ull << 30, {100})};
                                       s.filesystems[0].readonly = true;
                                   }),
                                   kT)
                    .empty());
    // Enough left (60 GB of 1000 GiB, 5.6 %) but filling in steps: 14 GB checkpoints every 20 min,
    // full within the 120 minutes: a warning that says the pace.
    f = diagnose::diagnose(window([&](Snapshot& s, int) {
                               FilesystemStats x = fs(60000000000ull, {100, 101});
                               x.fill_bytes_per_second = 14e9 / 1200;
                               x.fill_window_seconds = 7200;
                               x.step_bytes = 14000000000ull;
                               x.step_interval_seconds = 1200;
                               s.filesystems = {x};
                           }),
                           kT);
    ASSERT_EQ(rules_of(f), (std::vector<std::string>{"disk_space_low"}));
    EXPECT_EQ(f[0].severity, Severity::warning);
    EXPECT_EQ(f[0].summary,
              "writes of 13.0 GiB every 20 min fill /data: 55.9 GiB left, full in about 86 min; written by pid 100 "
              "(python) and 1 more")
        << f[0].summary;
    // Full within a quarter of the horizon at a steady pace: critical.
    f = diagnose::diagnose(window([&](Snapshot& s, int) {
                               FilesystemStats x = fs(60ull << 30, {100});
                               x.fill_bytes_per_second = 50e6;
                               x.fill_window_seconds = 60;
                               s.filesystems = {x};
                           }),
                           kT);
    ASSERT_EQ(rules_of(f), (std::vector<std::string>{"disk_space_low"}));
    EXPECT_EQ(f[0].severity, Severity::critical);
    EXPECT_NE(f[0].summary.find("/data fills at 50.0 MB/s: 60 GiB left, full in about 21 min"), std::string::npos)
        << f[0].summary;
    // Filling slowly enough: nothing; the projection off (0): nothing.
    Thresholds off = kT;
    off.disk_full_minutes = 0;
    EXPECT_TRUE(diagnose::diagnose(window([&](Snapshot& s, int) {
                                       FilesystemStats x = fs(500ull << 30, {100});
                                       x.fill_bytes_per_second = 50e6;
                                       s.filesystems = {x};
                                   }),
                                   off)
                    .empty());
}

TEST(Rules, GpuXidJudgesWhatCameWithinTheWindowByWhatItAsks) {
    // Watched from the start; one XID 13 before the window (counted in its first snapshot), then from
    // snapshot 10 a storm of XID 31 and at 20 one XID 48.
    auto xids = [](Snapshot& s, int i) {
        std::vector<XidCount> v{{13, 1, kStart - 5000}};
        if (i >= 10) v.push_back({31, static_cast<std::uint64_t>(500 * (i - 9)), kStart + i * 1000});
        if (i >= 20) v.push_back({48, 1, kStart + 20000});
        s.gpus[0].xid_errors = v;
    };
    auto f = diagnose::diagnose(window(xids), kT);
    EXPECT_EQ(rules_of(f), (std::vector<std::string>{"gpu_xid"}));
    ASSERT_FALSE(f.empty());
    EXPECT_EQ(f[0].subject, "gpu:0");
    EXPECT_EQ(f[0].severity, Severity::critical);  // a double-bit ECC error: drain
    EXPECT_NE(f[0].summary.find("XID 31 (GPU memory page fault) x10500"), std::string::npos) << f[0].summary;
    EXPECT_NE(f[0].summary.find("XID 48 (Double Bit ECC Error)"), std::string::npos) << f[0].summary;
    EXPECT_EQ(f[0].summary.find("XID 13"), std::string::npos) << "before the window: " << f[0].summary;
    EXPECT_NE(f[0].recommendation.find("Drain"), std::string::npos);
    ASSERT_TRUE(f[0].snippet);
    EXPECT_NE(f[0].snippet->find("nvidia-smi -r -i 0"), std::string::npos);
    // Only the application's kind: a warning that points at the program, no reset.
    f = diagnose::diagnose(window([](Snapshot& s, int i) {
                               s.gpus[0].xid_errors = std::vector<XidCount>{};
                               if (i >= 15) s.gpus[0].xid_errors->push_back({13, 1, kStart + 15000});
                           }),
                           kT);
    ASSERT_EQ(rules_of(f), (std::vector<std::string>{"gpu_xid"}));
    EXPECT_EQ(f[0].severity, Severity::warning);
    EXPECT_NE(f[0].recommendation.find("compute-sanitizer"), std::string::npos);
    EXPECT_EQ(f[0].snippet->find("nvidia-smi -r"), std::string::npos);
    // A clean-up after a killed process alone is information; an XID not in the catalogue a warning.
    f = diagnose::diagnose(window([](Snapshot& s, int i) {
                               s.gpus[0].xid_errors = std::vector<XidCount>{};
                               if (i >= 15) s.gpus[0].xid_errors->push_back({45, 2, kStart + 15000});
                           }),
                           kT);
    ASSERT_EQ(rules_of(f), (std::vector<std::string>{"gpu_xid"}));
    EXPECT_EQ(f[0].severity, Severity::info);
    EXPECT_NE(f[0].summary.find("x2"), std::string::npos);
    f = diagnose::diagnose(window([](Snapshot& s, int i) {
                               s.gpus[0].xid_errors = std::vector<XidCount>{};
                               if (i >= 15) s.gpus[0].xid_errors->push_back({45, 1, kStart + 15000});
                               if (i >= 16) s.gpus[0].xid_errors->push_back({999, 1, kStart + 16000});
                           }),
                           kT);
    ASSERT_EQ(rules_of(f), (std::vector<std::string>{"gpu_xid"}));
    EXPECT_EQ(f[0].severity, Severity::warning);
    EXPECT_NE(f[0].recommendation.find("xid-errors"), std::string::npos);
    // Counted before the window and no more since: nothing; not watched: nothing.
    EXPECT_TRUE(diagnose::diagnose(window([](Snapshot& s, int) {
                                       s.gpus[0].xid_errors = {{{79, 1, kStart - 1}}};
                                   }),
                                   kT)
                    .empty());
    EXPECT_TRUE(diagnose::diagnose(window(), kT).empty());
    // The watch began within the window (baton just started): what it counted belongs to the window.
    f = diagnose::diagnose(window([](Snapshot& s, int i) {
                               if (i >= 1) s.gpus[0].xid_errors = {{{94, 1, kStart + 500}}};
                           }),
                           kT);
    ASSERT_EQ(rules_of(f), (std::vector<std::string>{"gpu_xid"}));
    EXPECT_EQ(f[0].severity, Severity::warning);
    EXPECT_NE(f[0].recommendation.find("reset"), std::string::npos);
    // A history's window across a restart of baton: the count started again, and the new ones count.
    f = diagnose::diagnose(window([](Snapshot& s, int i) {
                               s.gpus[0].xid_errors = {{{63, i < 10 ? 5u : 1u, kStart}}};
                           }),
                           kT);
    ASSERT_EQ(rules_of(f), (std::vector<std::string>{"gpu_xid"}));
    // One snapshot: everything counted since the watch began.
    Window one{healthy(0)};
    one[0].gpus[0].xid_errors = {{{79, 1, kStart - 60000}}};
    f = diagnose::diagnose(one, kT);
    ASSERT_EQ(rules_of(f), (std::vector<std::string>{"gpu_xid"}));
    EXPECT_EQ(f[0].severity, Severity::critical);
}

namespace {

// `n` steps of pid 100 spread over the window, each `step_ms` long with `wait_ms` of data wait.
StepWindow steps_of(std::size_t n, double step_ms, double wait_ms, std::uint32_t pid = 100) {
    StepWindow out;
    for (std::size_t i = 0; i < n; ++i) {
        StepSample s;
        s.t_ms = 1'000'000 + static_cast<std::int64_t>(i) * 30'000 / static_cast<std::int64_t>(n);
        s.pid = pid;
        s.step_ms = step_ms;
        s.wait_ms = wait_ms;
        s.samples = 64;
        out.push_back(s);
    }
    return out;
}

}  // namespace

TEST(Rules, InputBoundFromTheHooksDataWait) {
    // The GPU looks healthy (90 %) and the workers idle, but the loop says it waits 40 % of each step.
    auto f = diagnose::diagnose(window(), kT, steps_of(50, 100, 40));
    const Finding* x = find_rule(f, "input_bound");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(x->subject, "gpu:0");  // pid 100 computes on GPU0
    EXPECT_NE(x->summary.find("waits for data 40 % of its step time (50 steps, 4 DataLoader worker(s)"),
              std::string::npos)
        << x->summary;
    ASSERT_FALSE(x->evidence.empty());
    EXPECT_EQ(x->evidence[0].metric, "steps.data_wait_percent");
    EXPECT_DOUBLE_EQ(*x->evidence[0].average, 40.0);
    EXPECT_DOUBLE_EQ(*x->evidence[0].breach_share, 1.0);
    EXPECT_NE(x->recommendation.find("num_workers=7"), std::string::npos) << x->recommendation;
    // One scale with data_in_step's: information above 5 %, a warning from 15 %.
    EXPECT_EQ(x->severity, Severity::warning);
    const auto six = diagnose::diagnose(window(), kT, steps_of(50, 100, 6));  // (kept: find_rule points into it)
    const Finding* small = find_rule(six, "input_bound");
    ASSERT_NE(small, nullptr);
    EXPECT_EQ(small->severity, Severity::info) << "6 % of the step";
    // Under the threshold: nothing, even where the system metrics alone would say input bound.
    auto starved = [](Snapshot& s, int) {
        s.gpus[0].utilization_percent = 30;
        for (ProcessInfo& p : s.processes)
            if (p.pid >= 100) p.cpu_percent = 98;
    };
    ASSERT_NE(find_rule(diagnose::diagnose(window(starved), kT), "input_bound"), nullptr);
    EXPECT_EQ(find_rule(diagnose::diagnose(window(starved), kT, steps_of(50, 100, 4)), "input_bound"), nullptr);
    // Too few steps say nothing either way (the system guess stays), nor do steps of the first seconds.
    EXPECT_EQ(find_rule(diagnose::diagnose(window(), kT, steps_of(4, 100, 90)), "input_bound"), nullptr);
    StepWindow early = steps_of(50, 100, 40);
    for (StepSample& s : early) s.t_ms = 1'029'000 + (s.t_ms - 1'000'000) / 10;  // the last 3 s only
    EXPECT_EQ(find_rule(diagnose::diagnose(window(), kT, early), "input_bound"), nullptr);
    // A process with no GPU (CPU training): subject pid:N.
    f = diagnose::diagnose(window(), kT, steps_of(10, 100, 60, 777));
    x = find_rule(f, "input_bound");
    ASSERT_NE(x, nullptr);
    EXPECT_EQ(x->subject, "pid:777");
    EXPECT_NE(x->summary.find("The training loop (pid 777) waits for data 60 %"), std::string::npos) << x->summary;
    EXPECT_NE(x->recommendation.find("loads every batch itself (num_workers=0)"), std::string::npos)
        << x->recommendation;
    EXPECT_NE(x->recommendation.find("With 8 cores for 1 GPU(s), use num_workers=7"), std::string::npos)
        << x->recommendation;  // GPU0 still runs pid 100's job
    ASSERT_TRUE(x->snippet);
    EXPECT_NE(x->snippet->find("num_workers=7"), std::string::npos);
    // It trains on the CPU: no pin_memory (pinning is for copies to a GPU); GPU0's trainer gets it.
    EXPECT_EQ(x->recommendation.find("pin_memory"), std::string::npos) << x->recommendation;
    EXPECT_EQ(x->snippet->find("pin_memory"), std::string::npos) << *x->snippet;
    EXPECT_NE(find_rule(diagnose::diagnose(window(), kT, steps_of(50, 100, 40)), "input_bound")
                  ->recommendation.find("pin_memory=True"),
              std::string::npos);
    // The same loop on a host whose CPUs are busy with something else: still its num_workers=0 to fix.
    f = diagnose::diagnose(window([](Snapshot& s, int) { s.cpu.total.utilization_percent = 97; }), kT,
                           steps_of(10, 100, 60, 777));
    x = find_rule(f, "input_bound");
    ASSERT_NE(x, nullptr);
    EXPECT_NE(x->recommendation.find("loads every batch itself (num_workers=0)"), std::string::npos)
        << x->recommendation;
    EXPECT_NE(x->recommendation.find("The host's CPUs are busy too"), std::string::npos) << x->recommendation;
}

TEST(Rules, StepTimeUnstable) {
    // One step in eight takes 5 x the usual (a checkpoint every 8 steps).
    StepWindow steps = steps_of(80, 50, 1);
    for (std::size_t i = 0; i < steps.size(); i += 8) steps[i].step_ms = 250;
    auto f = diagnose::diagnose(window(), kT, steps);
    const Finding* x = find_rule(f, "step_time_unstable");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(x->subject, "gpu:0");
    EXPECT_NE(x->summary.find("median 49.0 ms, p95 249.0 ms"), std::string::npos) << x->summary;  // minus the wait
    // Steps that alternate between a ready batch and a long data wait are input_bound's, not this.
    StepWindow bursty = steps_of(80, 50, 1);
    for (std::size_t i = 0; i < bursty.size(); i += 8) {
        bursty[i].step_ms = 250;
        bursty[i].wait_ms = 201;
    }
    f = diagnose::diagnose(window(), kT, bursty);
    EXPECT_EQ(find_rule(f, "step_time_unstable"), nullptr);
    // Steady steps, or a spread within the ratio: nothing.
    EXPECT_EQ(find_rule(diagnose::diagnose(window(), kT, steps_of(80, 50, 1)), "step_time_unstable"), nullptr);
    for (std::size_t i = 0; i < steps.size(); i += 8) steps[i].step_ms = 90;
    EXPECT_EQ(find_rule(diagnose::diagnose(window(), kT, steps), "step_time_unstable"), nullptr);
    // Fewer than 20 steps: no tail to judge.
    StepWindow few = steps_of(19, 50, 1);
    few[0].step_ms = few[9].step_ms = 500;
    EXPECT_EQ(find_rule(diagnose::diagnose(window(), kT, few), "step_time_unstable"), nullptr);
}

TEST(Rules, EveryRuleIdIsKnown) {
    EXPECT_EQ(rule_ids().size(), 24u);
    for (const std::string& id : rule_ids()) EXPECT_FALSE(id.empty());
}

namespace {

// Four ranks' steps over the window; `edit` changes rank r's step i.
StepWindow rank_steps(const std::function<void(StepSample&, int rank, std::size_t i)>& edit) {
    StepWindow out;
    for (int rank = 0; rank < 4; ++rank) {
        StepWindow mine = steps_of(40, 100, 5, 100 + static_cast<std::uint32_t>(rank));
        for (std::size_t i = 0; i < mine.size(); ++i) {
            mine[i].rank = rank;
            edit(mine[i], rank, i);
            out.push_back(mine[i]);
        }
    }
    std::sort(out.begin(), out.end(), [](const StepSample& a, const StepSample& b) { return a.t_ms < b.t_ms; });
    return out;
}

}  // namespace

TEST(Rules, RankStragglerBySlowSteps) {
    auto f = diagnose::diagnose(window(), kT, rank_steps([](StepSample& s, int rank, std::size_t) {
                                    if (rank == 2) s.step_ms = 180;
                                }));
    const Finding* x = find_rule(f, "rank_straggler");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(x->subject, "rank:2");
    EXPECT_NE(x->summary.find("its median step takes 180.0 ms, 1.8 x the other ranks' 100.0 ms (over 4 ranks)"),
              std::string::npos)
        << x->summary;
    ASSERT_EQ(x->evidence.size(), 8u);  // each rank's step time and data wait
    EXPECT_EQ(x->evidence[4].metric, "steps.rank2.step_time_ms");
    EXPECT_EQ(x->evidence[4].average, 180.0);
    EXPECT_EQ(x->evidence[4].samples, 40u);
    // 1.4 x is within the ratio (1.5): no finding.
    f = diagnose::diagnose(window(), kT, rank_steps([](StepSample& s, int rank, std::size_t) {
                               if (rank == 2) s.step_ms = 140;
                           }));
    EXPECT_EQ(find_rule(f, "rank_straggler"), nullptr);
}

TEST(Rules, RankStragglerByDataWaitWhenDdpEvensTheSteps) {
    // Every rank's step is 100 ms (the all-reduce waits for the slowest), but rank 1 waits 60 ms for data.
    auto f = diagnose::diagnose(window(), kT, rank_steps([](StepSample& s, int rank, std::size_t) {
                                    if (rank == 1) s.wait_ms = 60;
                                }));
    const Finding* x = find_rule(f, "rank_straggler");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(x->subject, "rank:1");
    EXPECT_NE(x->summary.find("it waits 60.0 ms for each batch against the other ranks' 5.0 ms"), std::string::npos)
        << x->summary;
    // One rank alone, or too few steps: nothing to compare.
    EXPECT_EQ(find_rule(diagnose::diagnose(window(), kT, steps_of(40, 100, 60)), "rank_straggler"), nullptr);
    StepWindow few = rank_steps([](StepSample& s, int rank, std::size_t) {
        if (rank == 1) s.wait_ms = 60;
    });
    few.resize(12);
    EXPECT_EQ(find_rule(diagnose::diagnose(window(), kT, few), "rank_straggler"), nullptr);
}

TEST(Rules, RankStragglerByAnIdleGpuOfTheJob) {
    // Trainer 100's ranks on GPU0..3 (ranks 110..113, children of 100); GPU2 is 30 % busy, the others 95 %.
    auto edit = [](Snapshot& s, int) {
        s.gpus.clear();
        for (unsigned i = 0; i < 4; ++i) {
            const auto rank_pid = 110 + i;
            s.processes.push_back(proc(rank_pid, 100, "python", 90));
            GpuInfo g = gpu(i, i == 2 ? 30 : 95, 60);
            GpuProcess gp;
            gp.pid = rank_pid;
            gp.used_memory_bytes = 40ull << 30;
            g.processes.push_back(gp);
            s.gpus.push_back(g);
        }
    };
    auto f = diagnose::diagnose(window(edit), kT);
    const Finding* x = find_rule(f, "rank_straggler");
    ASSERT_NE(x, nullptr) << ::testing::PrintToString(rules_of(f));
    EXPECT_EQ(x->subject, "gpu:2");
    EXPECT_NE(x->summary.find("GPU2 of a job on 4 GPUs is 30 % busy while the job's other GPUs are 95 %"),
              std::string::npos)
        << x->summary;
    EXPECT_EQ(x->evidence.size(), 4u);
    // Evenly busy GPUs: none.
    auto even = [&](Snapshot& s, int i) {
        edit(s, i);
        s.gpus[2].utilization_percent = 90;
    };
    EXPECT_EQ(find_rule(diagnose::diagnose(window(even), kT), "rank_straggler"), nullptr);
}
