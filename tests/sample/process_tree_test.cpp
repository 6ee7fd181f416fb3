#include <gtest/gtest.h>

#include <algorithm>

#include "sample/process_tree.hpp"

using namespace baton;

namespace {
ProcessInfo proc(std::uint32_t pid, std::uint32_t ppid, double cpu, std::uint64_t rss) {
    ProcessInfo p;
    p.pid = pid;
    p.ppid = ppid;
    p.cpu_percent = cpu;
    p.rss_bytes = rss;
    return p;
}
}  // namespace

TEST(ProcessTree, TrainerWithWorkersSumsAsOneJob) {
    std::vector<ProcessInfo> ps = {proc(1, 0, 0, 1),        proc(100, 1, 95, 1000), proc(101, 100, 40, 200),
                                   proc(102, 100, 45, 200), proc(103, 101, 5, 10),  proc(200, 1, 1, 1)};
    ps[1].gpu_memory_bytes = 5000;
    ProcessTree t(ps);
    auto d = t.descendants(100);
    std::vector<std::uint32_t> pids;
    for (auto i : d) pids.push_back(ps[i].pid);
    std::sort(pids.begin(), pids.end());
    EXPECT_EQ(pids, (std::vector<std::uint32_t>{101, 102, 103}));
    auto tot = t.subtree_totals(100);
    EXPECT_EQ(tot.processes, 4u);
    EXPECT_DOUBLE_EQ(tot.cpu_percent, 185);
    EXPECT_EQ(tot.rss_bytes, 1410u);
    EXPECT_EQ(tot.gpu_memory_bytes, 5000u);
    EXPECT_EQ(t.children(1).size(), 2u);
    EXPECT_TRUE(t.children(999).empty());
}

TEST(ProcessTree, CyclesAndSelfParentsTerminate) {
    std::vector<ProcessInfo> ps = {proc(5, 6, 1, 1), proc(6, 5, 1, 1), proc(7, 7, 1, 1)};
    ProcessTree t(ps);
    EXPECT_EQ(t.descendants(5).size(), 1u);
    EXPECT_EQ(t.subtree_totals(5).processes, 2u);
    EXPECT_EQ(t.subtree_totals(7).processes, 1u);
}
