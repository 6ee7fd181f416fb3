// The pool the queue's scheduler decides on, built from a snapshot: foreign processes, unknown and
// lost GPUs, a Slurm allocation's GPUs, NUMA CPUs from a fixture sysfs, hostile cpulists.
#include <gtest/gtest.h>

#include "queue/pool.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

using baton::test::GiB;

Snapshot two_gpu_snapshot() {
    Snapshot s;
    s.gpu_status = "ok";
    s.gpu_state = GpuState::ok;
    for (unsigned i = 0; i < 2; ++i) {
        GpuInfo g;
        g.index = i;
        g.uuid = "GPU-aaaa000" + std::to_string(i) + "-1111-2222-3333-444455556666";
        g.pci_bus_id = i == 0 ? "00000000:3B:00.0" : "00000000:AF:00.0";
        g.memory_total_bytes = 80 * GiB;
        g.memory_used_bytes = GiB;
        s.gpus.push_back(g);
    }
    ProcessInfo mine, theirs;
    mine.pid = 100;
    mine.user = "me";
    theirs.pid = 200;
    theirs.user = "alice";
    s.processes = {mine, theirs};
    GpuProcess a, b, x;
    a.pid = 100;  // started by the queue
    b.pid = 200;  // not
    x.pid = 300;
    x.type = GpuProcessType::graphics;  // a display server is not a compute job
    s.gpus[0].processes = {a, x};
    s.gpus[1].processes = {b};
    return s;
}

PoolOptions options(const std::string& sys_root) {
    PoolOptions o;
    o.sys_root = sys_root;
    o.cpus = {0, 1, 2, 3, 4, 5, 6, 7};
    o.memory_bytes = 64 * GiB;
    return o;
}

}  // namespace

TEST(QueuePool, ForeignProcessesAndNumaCpus) {
    test::TempDir d;
    d.write("sys/bus/pci/devices/0000:3b:00.0/local_cpulist", "0-3,16-19\n");
    d.write("sys/bus/pci/devices/0000:af:00.0/local_cpulist", "4-7\n");
    const Pool p = make_pool(two_gpu_snapshot(), {100}, options(d.path() + "/sys"));
    ASSERT_TRUE(p.gpus_known);
    ASSERT_EQ(p.gpus.size(), 2u);
    EXPECT_TRUE(p.gpus[0].foreign.empty()) << "the queue's own process and a graphics one are not foreign";
    ASSERT_EQ(p.gpus[1].foreign.size(), 1u);
    EXPECT_EQ(p.gpus[1].foreign[0].pid, 200u);
    EXPECT_EQ(p.gpus[1].foreign[0].user, "alice");
    EXPECT_EQ(p.gpus[0].local_cpus, (std::vector<unsigned>{0, 1, 2, 3})) << "only the CPUs the queue may use";
    EXPECT_EQ(p.gpus[1].local_cpus, (std::vector<unsigned>{4, 5, 6, 7}));
    EXPECT_EQ(p.memory_bytes, 64 * GiB);

    // The scheduler on it: the free GPU is the one without alice's process.
    QueueJob j;
    j.id = 1;
    j.want.gpus = 1;
    const Plan plan_ = plan({j}, p);
    ASSERT_EQ(plan_.starts.size(), 1u);
    EXPECT_EQ(plan_.starts[0].gpus[0], p.gpus[0].uuid);
}

TEST(QueuePool, UnknownStaleAndLostGpus) {
    Snapshot s = two_gpu_snapshot();
    s.gpu_status = "no NVIDIA driver (libnvidia-ml.so.1 not found)";
    s.gpu_state = GpuState::no_driver;
    Pool p = make_pool(s, {}, options("/nonexistent"));
    EXPECT_FALSE(p.gpus_known);
    EXPECT_EQ(p.gpus_problem, "no NVIDIA driver (libnvidia-ml.so.1 not found)");

    s = two_gpu_snapshot();
    s.gpus[1].stale = true;
    p = make_pool(s, {}, options("/nonexistent"));
    EXPECT_FALSE(p.gpus_known);
    EXPECT_EQ(p.gpus_problem, "GPU1's readings are stale");
    EXPECT_TRUE(p.gpus[0].local_cpus.empty()) << "no sysfs: no NUMA preference";

    s = two_gpu_snapshot();
    s.gpus[1].lost = true;
    s.gpus[0].memory_used_bytes.reset();
    p = make_pool(s, {}, options("/nonexistent"));
    EXPECT_TRUE(p.gpus_known);
    ASSERT_EQ(p.gpus.size(), 1u) << "a lost GPU is not in the pool";
    EXPECT_EQ(p.gpus[0].memory_used_bytes, 80 * GiB) << "unknown use counts as full";
}

TEST(QueuePool, ASlurmAllocationsGpus) {
    EXPECT_FALSE(allocation_gpus({{"CUDA_VISIBLE_DEVICES", "0"}}).has_value()) << "outside Slurm: every GPU";
    EXPECT_EQ(allocation_gpus({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_GPUS", "1,3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}),
              (std::vector<std::string>{"1", "3"}));
    EXPECT_EQ(allocation_gpus({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_GPUS", "3"}, {"SLURM_JOB_GPUS", "1,3"}}),
              std::vector<std::string>{"3"});
    EXPECT_EQ(allocation_gpus({{"SLURM_JOB_ID", "7"}, {"CUDA_VISIBLE_DEVICES", "GPU-aaaa0001"}}),
              std::vector<std::string>{"GPU-aaaa0001"});
    EXPECT_EQ(allocation_gpus({{"SLURM_JOB_ID", "7"}, {"CUDA_VISIBLE_DEVICES", "NoDevFiles"}}),
              std::vector<std::string>{});
    EXPECT_EQ(allocation_gpus({{"SLURM_JOB_ID", "7"}}), std::vector<std::string>{});

    PoolOptions o = options("/nonexistent");
    o.allowed_gpus = std::vector<std::string>{"1"};
    Pool p = make_pool(two_gpu_snapshot(), {}, o);
    ASSERT_EQ(p.gpus.size(), 1u);
    EXPECT_EQ(p.gpus[0].index, 1u);
    o.allowed_gpus = std::vector<std::string>{"GPU-aaaa0000"};  // a UUID prefix, as CUDA takes it
    p = make_pool(two_gpu_snapshot(), {}, o);
    ASSERT_EQ(p.gpus.size(), 1u);
    EXPECT_EQ(p.gpus[0].index, 0u);
    o.allowed_gpus = std::vector<std::string>{"GPU", "99999999", ""};  // too short a prefix, no such index
    EXPECT_TRUE(make_pool(two_gpu_snapshot(), {}, o).gpus.empty());
}

// [queue] gpus and prefer: the admin's pool (inside an allocation, the GPUs in both), and the order
// the scheduler hands GPUs out in.
TEST(QueuePool, TheConfiguredGpusAndTheOrderTheyAreGiven) {
    EXPECT_EQ(*baton::text::parse_gpu_list("0-2, 5,GPU-aaaa0000,1"),
              (std::vector<std::string>{"0", "1", "2", "5", "GPU-aaaa0000"}));
    EXPECT_TRUE(baton::text::parse_gpu_list("")->empty());
    for (const char* bad : {"3-1", "0,,1", "GPU", "0-99999", "GPU-aa aa0000", "a;b-cdefgh", "-1"})
        EXPECT_FALSE(baton::text::parse_gpu_list(bad).has_value()) << bad;
    PoolOptions o = options("/nonexistent");
    o.configured_gpus = {"GPU-aaaa0001"};
    Pool p = make_pool(two_gpu_snapshot(), {}, o);
    ASSERT_EQ(p.gpus.size(), 1u);
    EXPECT_EQ(p.gpus[0].index, 1u);
    o.allowed_gpus = std::vector<std::string>{"0"};  // an allocation without that GPU: none is left
    EXPECT_TRUE(make_pool(two_gpu_snapshot(), {}, o).gpus.empty());
    o = options("/nonexistent");
    o.prefer = {"1"};
    p = make_pool(two_gpu_snapshot(), {}, o);
    ASSERT_EQ(p.gpus.size(), 2u);
    EXPECT_EQ(p.gpus[0].preference, 1u) << "GPU0 is not named: after the preferred";
    EXPECT_EQ(p.gpus[1].preference, 0u);
}

TEST(QueuePool, CpuListsFromSysfsAndHostileOnes) {
    EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<unsigned>{0, 1, 2, 3, 8, 10, 11}));
    EXPECT_EQ(parse_cpu_list(" 5 , 2-3 ,5"), (std::vector<unsigned>{2, 3, 5}));
    EXPECT_TRUE(parse_cpu_list("").empty());
    EXPECT_TRUE(parse_cpu_list("5-2,a,-,1-,,\xff").empty());
    EXPECT_TRUE(parse_cpu_list("0-4294967295").empty()) << "beyond the cap: refused, not looped over";
    EXPECT_EQ(parse_cpu_list("65534-70000,65535").size(), 1u);
}
