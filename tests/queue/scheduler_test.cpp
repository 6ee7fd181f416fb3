// The queue's scheduler on its own: the rules of queue/scheduler.hpp one by one, the reasons a job
// waits, and a simulation of 40 jobs flowing through 4 GPUs in which no GPU ever serves two jobs that
// do not share, dependencies and reservations hold, and every job that can run does.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "queue/scheduler.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

using baton::test::GiB;

Pool four_gpus() {
    Pool p;
    for (unsigned i = 0; i < 4; ++i) {
        PoolGpu g;
        g.uuid = "GPU-" + std::to_string(i);
        g.index = i;
        g.memory_total_bytes = 80 * GiB;
        g.memory_used_bytes = GiB / 2;  // the driver's own, under 5 %
        g.local_cpus =
            i < 2 ? std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7} : std::vector<unsigned>{8, 9, 10, 11, 12, 13, 14, 15};
        p.gpus.push_back(g);
    }
    for (unsigned c = 0; c < 16; ++c) p.cpus.push_back(c);
    p.memory_bytes = 256 * GiB;
    return p;
}

QueueJob job(std::int64_t id, unsigned gpus, int priority = 0) {
    QueueJob j;
    j.id = id;
    j.priority = priority;
    j.want.gpus = gpus;
    return j;
}

QueueJob running(std::int64_t id, std::vector<std::string> gpus, std::vector<unsigned> cpus = {}) {
    QueueJob j;
    j.id = id;
    j.state = store::JobState::running;
    j.want.gpus = static_cast<unsigned>(gpus.size());
    j.want.cpus = static_cast<unsigned>(cpus.size());
    j.gpus_held = std::move(gpus);
    j.cpus_held = std::move(cpus);
    return j;
}

const Start* started(const Plan& p, std::int64_t id) {
    for (const Start& s : p.starts)
        if (s.job == id) return &s;
    return nullptr;
}

}  // namespace

TEST(QueueScheduler, StateNamesRoundTrip) {
    for (store::JobState s :
         {store::JobState::queued, store::JobState::held, store::JobState::starting, store::JobState::running,
          store::JobState::done, store::JobState::failed, store::JobState::cancelled, store::JobState::lost})
        EXPECT_EQ(store::state_from_name(store::state_name(s)), s);
    EXPECT_FALSE(store::state_from_name("Running").has_value());
    EXPECT_TRUE(store::is_final(store::JobState::lost));
    EXPECT_FALSE(store::is_final(store::JobState::held));
}

TEST(QueueScheduler, TwentyAtOnceOnFourFreeGpusStartExactlyFour) {
    std::vector<QueueJob> jobs;
    for (int i = 1; i <= 20; ++i) jobs.push_back(job(i, 1));
    const Plan p = plan(jobs, four_gpus());
    ASSERT_EQ(p.starts.size(), 4u);
    std::set<std::string> gpus;
    for (const Start& s : p.starts) {
        ASSERT_EQ(s.gpus.size(), 1u);
        gpus.insert(s.gpus[0]);
        EXPECT_LE(s.job, 4) << "submission order";
    }
    EXPECT_EQ(gpus.size(), 4u);
    EXPECT_EQ(p.waiting.size(), 16u);
    EXPECT_EQ(p.waiting.at(5),
              "waiting for 1 GPU; GPU0 held by job 1, GPU1 held by job 2, GPU2 held by job 3, "
              "GPU3 held by job 4");
}

TEST(QueueScheduler, TheReasonNamesEveryGpuItCannotHave) {
    Pool pool = four_gpus();
    pool.gpus[3].foreign.push_back({4411, "alice"});
    pool.gpus[2].memory_used_bytes = 30 * GiB;  // nobody's compute process: still not free
    std::vector<QueueJob> jobs = {running(12, {"GPU-1"}), running(13, {"GPU-0"})};
    QueueJob j = job(20, 2);
    j.want.gpu_memory_bytes = 20 * GiB;
    jobs.push_back(j);
    const Plan p = plan(jobs, pool);
    EXPECT_TRUE(p.starts.empty());
    EXPECT_EQ(p.waiting.at(20),
              "waiting for 2 GPUs with 20 GiB free; GPU0 held by job 13, GPU1 held by job 12, "
              "GPU2 has 30 GiB in use, GPU3 has a foreign process pid 4411 (alice)");
}

TEST(QueueScheduler, PriorityThenSubmissionOrder) {
    std::vector<QueueJob> jobs = {job(1, 4), job(2, 2, 5), job(3, 2, 5)};
    const Plan p = plan(jobs, four_gpus());
    ASSERT_EQ(p.starts.size(), 2u);
    EXPECT_EQ(p.starts[0].job, 2);
    EXPECT_EQ(p.starts[1].job, 3);
    EXPECT_EQ(p.starts[0].gpus, (std::vector<std::string>{"GPU-0", "GPU-1"}));
    EXPECT_EQ(p.starts[1].gpus, (std::vector<std::string>{"GPU-2", "GPU-3"}));
    EXPECT_TRUE(p.waiting.count(1));
}

// --at / --delay: a delayed job waits, says until when, and keeps nothing for itself meanwhile (a
// later job takes the GPUs); once its time has come it is judged as any other.
TEST(QueueScheduler, ADelayedJobWaitsForItsTimeAndReservesNothing) {
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    const std::int64_t now = 1765000000000;  // 2025-12-06 05:46:40 UTC
    QueueJob later = job(1, 4, 10);
    later.not_before_ms = now + 5 * 3600 * 1000 + 12 * 60 * 1000;
    std::vector<QueueJob> jobs = {later, job(2, 4)};
    Plan p = plan(jobs, four_gpus(), now);
    ASSERT_EQ(p.starts.size(), 1u);
    EXPECT_EQ(p.starts[0].job, 2) << "the delayed one, first by priority, holds nothing back";
    EXPECT_EQ(p.waiting[1], "delayed: starts at 10:58:40 (in 5h12m)");
    EXPECT_FALSE(p.head.has_value());
    jobs[0].not_before_ms = now + 2 * 86400 * 1000;
    EXPECT_EQ(plan(jobs, four_gpus(), now).waiting[1], "delayed: starts at 2025-12-08 05:46:40 (in 2d00h)");
    p = plan(jobs, four_gpus(), *jobs[0].not_before_ms);
    ASSERT_EQ(p.starts.size(), 1u);
    EXPECT_EQ(p.starts[0].job, 1) << "its time has come: first by priority";
}

// [queue] prefer: free GPUs are handed out in the preferred order, then by index; the job's
// CUDA_VISIBLE_DEVICES still lists them by index.
TEST(QueueScheduler, PreferredGpusAreGivenFirst) {
    Pool pool = four_gpus();
    pool.gpus[3].preference = 0;
    pool.gpus[2].preference = 1;
    pool.gpus[0].preference = pool.gpus[1].preference = 2;
    const Plan p = plan({job(1, 1), job(2, 2), job(3, 1)}, pool);
    ASSERT_EQ(p.starts.size(), 3u);
    EXPECT_EQ(p.starts[0].gpus, (std::vector<std::string>{"GPU-3"}));
    EXPECT_EQ(p.starts[1].gpus, (std::vector<std::string>{"GPU-0", "GPU-2"})) << "GPU2, then GPU0; in index order";
    EXPECT_EQ(p.starts[2].gpus, (std::vector<std::string>{"GPU-1"}));
}

TEST(QueueScheduler, BackfillNeverTakesWhatTheHeadCanUse) {
    // GPU0 and GPU1 busy. Job 10 (first in line) needs 3 GPUs: it keeps GPU2 and GPU3, so job 11
    // (1 GPU) waits behind it, while job 12 (CPUs only) and job 13 (GPU1, busy) do not touch its share.
    std::vector<QueueJob> jobs = {running(1, {"GPU-0"}), running(2, {"GPU-1"}), job(10, 3), job(11, 1)};
    QueueJob cpu_only = job(12, 0);
    cpu_only.want.cpus = 4;
    jobs.push_back(cpu_only);
    Pool pool = four_gpus();
    Plan p = plan(jobs, pool);
    EXPECT_EQ(p.head, 10);
    EXPECT_EQ(started(p, 11), nullptr);
    EXPECT_EQ(p.waiting.at(11),
              "waiting for 1 GPU; GPU0 held by job 1, GPU1 held by job 2, GPU2 is kept for job 10 "
              "(first in line), GPU3 is kept for job 10 (first in line)");
    ASSERT_NE(started(p, 12), nullptr) << "a job without GPUs backfills";
    EXPECT_EQ(started(p, 12)->cpus.size(), 4u);

    // When the head also needs CPUs, those it could take now are kept for it too.
    jobs[2].want.cpus = 14;
    p = plan(jobs, pool);
    EXPECT_EQ(started(p, 12), nullptr);
    EXPECT_EQ(p.waiting.at(12), "needs 4 CPUs, 2 free");

    // A head that names its GPU keeps only that one: the others backfill.
    std::vector<QueueJob> named = {running(1, {"GPU-1"}), job(10, 0), job(11, 1), job(12, 1)};
    named[1].want.gpu_uuids = {"GPU-1"};
    p = plan(named, pool);
    EXPECT_EQ(p.head, 10);
    EXPECT_EQ(p.waiting.at(10), "waiting for its GPU; GPU1 held by job 1");
    ASSERT_NE(started(p, 11), nullptr);
    EXPECT_EQ(started(p, 11)->gpus, std::vector<std::string>{"GPU-0"});
    EXPECT_EQ(started(p, 12)->gpus, std::vector<std::string>{"GPU-2"});
}

TEST(QueueScheduler, SharingPacksWhileThePeaksFit) {
    Pool pool = four_gpus();
    pool.gpus.resize(2);  // 80 GiB each, 10 % kept free: 72 GiB to share
    auto sharer = [](std::int64_t id, std::uint64_t gib) {
        QueueJob j = job(id, 1);
        j.want.share = true;
        j.want.gpu_memory_bytes = gib * GiB;
        return j;
    };
    std::vector<QueueJob> jobs = {sharer(1, 30), sharer(2, 30), sharer(3, 30)};
    Plan p = plan(jobs, pool);
    ASSERT_EQ(p.starts.size(), 3u);
    EXPECT_EQ(p.starts[0].gpus, p.starts[1].gpus) << "the first two pack on one GPU";
    EXPECT_NE(p.starts[2].gpus, p.starts[0].gpus) << "the third does not fit there";

    // One GPU: the third waits, and says how much is left.
    pool.gpus.resize(1);
    p = plan(jobs, pool);
    ASSERT_EQ(p.starts.size(), 2u);
    EXPECT_EQ(p.waiting.at(3), "waiting for 1 GPU with 30 GiB free; GPU0 has 12 GiB left to share");

    // A GPU that really uses more than its sharers declared counts what it uses.
    std::vector<QueueJob> on_it = {running(1, {"GPU-0"}), sharer(2, 30)};
    on_it[0].want.share = true;
    on_it[0].want.gpu_memory_bytes = 10 * GiB;
    pool.gpus[0].memory_used_bytes = 50 * GiB;
    p = plan(on_it, pool);
    EXPECT_EQ(p.waiting.at(2), "waiting for 1 GPU with 30 GiB free; GPU0 has 22 GiB left to share");
    // Nobody shares with an exclusive job, and an exclusive job waits for the sharers to leave.
    on_it[0].want.share = false;
    pool.gpus[0].memory_used_bytes = GiB;
    p = plan(on_it, pool);
    EXPECT_EQ(p.waiting.at(2), "waiting for 1 GPU with 30 GiB free; GPU0 held by job 1");
    std::vector<QueueJob> exclusive_after = {sharer(1, 10), job(2, 1)};
    p = plan(exclusive_after, pool);
    EXPECT_EQ(p.waiting.at(2), "waiting for 1 GPU; GPU0 shared by job 1");
}

TEST(QueueScheduler, DependenciesWaitSucceedOrNeverRun) {
    auto after = [](std::int64_t id, std::vector<std::int64_t> deps, bool ok) {
        QueueJob j = job(id, 0);
        j.after = std::move(deps);
        j.after_ok = ok;
        return j;
    };
    std::vector<QueueJob> jobs = {running(1, {}), after(2, {1}, false), after(3, {1}, true), after(4, {99}, false)};
    Plan p = plan(jobs, four_gpus());
    EXPECT_EQ(p.waiting.at(2), "waiting for job 1 to end");
    EXPECT_EQ(p.waiting.at(3), "waiting for job 1 to succeed");
    EXPECT_EQ(p.never.at(4), "job 99 it waits for does not exist");
    EXPECT_TRUE(p.starts.empty());

    jobs[0].state = store::JobState::failed;
    p = plan(jobs, four_gpus());
    EXPECT_NE(started(p, 2), nullptr) << "after: any end";
    EXPECT_EQ(p.never.at(3), "job 1 it waits for ended failed");
    EXPECT_EQ(p.waiting.at(3), "can never run: job 1 it waits for ended failed");

    jobs[0].state = store::JobState::done;
    p = plan(jobs, four_gpus());
    EXPECT_NE(started(p, 3), nullptr);
}

TEST(QueueScheduler, JobsWithoutGpusNeverWaitForNvml) {
    Pool pool = four_gpus();
    pool.gpus_known = false;
    pool.gpus_problem = "nvmlDeviceGetComputeRunningProcesses did not answer within 2000 ms";
    std::vector<QueueJob> jobs = {job(1, 1), job(2, 0)};
    const Plan p = plan(jobs, pool);
    ASSERT_EQ(p.starts.size(), 1u);
    EXPECT_EQ(p.starts[0].job, 2);
    EXPECT_EQ(
        p.waiting.at(1),
        "waiting for the GPUs to be readable: nvmlDeviceGetComputeRunningProcesses did not answer within 2000 ms");
    EXPECT_FALSE(p.head.has_value()) << "nothing is kept for a job that cannot be placed at all";
}

TEST(QueueScheduler, WhatCanNeverFitReservesNothing) {
    Pool pool = four_gpus();
    QueueJob huge = job(1, 8);
    QueueJob named = job(2, 0);
    named.want.gpu_uuids = {"GPU-not-here"};
    QueueJob cpus = job(3, 0);
    cpus.want.cpus = 64;
    QueueJob big_gpus = job(4, 1);
    big_gpus.want.gpu_memory_bytes = 141 * GiB;
    QueueJob memory = job(5, 0);
    memory.want.memory_bytes = 512 * GiB;
    std::vector<QueueJob> jobs = {huge, named, cpus, big_gpus, memory, job(6, 4)};
    const Plan p = plan(jobs, pool);
    EXPECT_EQ(p.never.at(1), "asks for 8 GPU(s), this machine has 4");
    EXPECT_EQ(p.never.at(2), "GPU GPU-not-here is not one this queue may use");
    EXPECT_EQ(p.never.at(3), "asks for 64 CPUs, this queue has 16");
    EXPECT_EQ(p.never.at(4), "asks for 1 GPU(s) of 141 GiB, this machine has 0");
    EXPECT_EQ(p.never.at(5), "asks for 512 GiB of memory, this queue has 256 GiB");
    ASSERT_NE(started(p, 6), nullptr);
    EXPECT_FALSE(p.head.has_value());
}

TEST(QueueScheduler, CpusComeFromTheGpusNumaNode) {
    QueueJob j = job(1, 1);
    j.want.cpus = 4;
    std::vector<QueueJob> jobs = {running(9, {"GPU-0", "GPU-1"}), j};
    const Plan p = plan(jobs, four_gpus());
    ASSERT_NE(started(p, 1), nullptr);
    EXPECT_EQ(started(p, 1)->gpus, std::vector<std::string>{"GPU-2"});
    EXPECT_EQ(started(p, 1)->cpus, (std::vector<unsigned>{8, 9, 10, 11}));
}

TEST(QueueScheduler, HeldAndEndedJobsTakeNothing) {
    QueueJob held = job(1, 4);
    held.state = store::JobState::held;
    QueueJob ended = running(2, {"GPU-0", "GPU-1", "GPU-2", "GPU-3"});
    ended.state = store::JobState::done;
    std::vector<QueueJob> jobs = {held, ended, job(3, 4)};
    const Plan p = plan(jobs, four_gpus());
    ASSERT_EQ(p.starts.size(), 1u);
    EXPECT_EQ(p.starts[0].job, 3);
    EXPECT_FALSE(p.waiting.count(1)) << "a held job is not waiting for resources";
}

// 40 jobs of mixed sizes, priorities and dependencies, some sharing, and a foreign process that
// comes and goes on GPU3; running jobs end at random. At every step: no GPU serves an exclusive job
// and anyone else, shared GPUs stay within their memory, no job starts on the foreign process's
// GPU or before what it waits for, and at the end every job has run (or can never run).
TEST(QueueScheduler, ThousandsOfLikeJobsGetTheReasonTheirKindGets) {
    // 16 one-CPU jobs start, the 17th is the head, the rest of its kind wait for the same reason;
    // jobs of other kinds among them are still judged on their own: a CPU-less job backfills, a
    // GPU job is told about the CPUs its GPUs' node has left.
    Pool p = four_gpus();
    std::vector<QueueJob> jobs;
    for (std::int64_t id = 1; id <= 3000; ++id) {
        QueueJob j = job(id, 0);
        j.want.cpus = 1;
        if (id == 1500) j.want.cpus = 0;   // needs nothing the head keeps: starts
        if (id == 2000) j.want.gpus = 1;   // a GPU is free, the CPUs are not
        if (id == 2500) j.want.cpus = 32;  // more than the machine has: never
        jobs.push_back(j);
    }
    const Plan plan_ = plan(jobs, p);
    ASSERT_EQ(plan_.starts.size(), 17u);
    EXPECT_NE(started(plan_, 1500), nullptr);
    EXPECT_EQ(plan_.head, std::optional<std::int64_t>(17));
    EXPECT_EQ(plan_.waiting.at(17), "needs 1 CPUs, 0 free");
    EXPECT_EQ(plan_.waiting.at(18), "needs 1 CPUs, 0 free");
    EXPECT_EQ(plan_.waiting.at(2999), "needs 1 CPUs, 0 free");
    EXPECT_EQ(plan_.waiting.at(2000), "needs 1 CPUs, 0 free");  // (its GPU would be free)
    EXPECT_EQ(plan_.waiting.at(2500), "can never run: asks for 32 CPUs, this queue has 16");
    EXPECT_EQ(plan_.waiting.size(), 3000u - 17u);
}

TEST(QueueScheduler, FortyJobsFlowWithoutFights) {
    for (unsigned seed = 1; seed <= 25; ++seed) {
        std::mt19937 rng(seed);
        Pool pool = four_gpus();
        std::vector<QueueJob> jobs;
        for (int i = 1; i <= 40; ++i) {
            QueueJob j = job(i, std::uniform_int_distribution<unsigned>(0, 3)(rng),
                             std::uniform_int_distribution<int>(0, 2)(rng));
            if (j.want.gpus == 1 && rng() % 3 == 0) {
                j.want.share = true;
                j.want.gpu_memory_bytes = (10 + rng() % 40) * GiB;
            }
            j.want.cpus = rng() % 5;
            j.want.memory_bytes = (rng() % 64) * GiB;
            if (i > 5 && rng() % 4 == 0) {
                j.after = {static_cast<std::int64_t>(1 + rng() % static_cast<unsigned>(i - 1))};
                j.after_ok = rng() % 2 == 0;
            }
            jobs.push_back(j);
        }
        std::map<std::int64_t, std::size_t> at;
        for (std::size_t k = 0; k < jobs.size(); ++k) at[jobs[k].id] = k;
        int step = 0;
        for (; step < 2000; ++step) {
            pool.gpus[3].foreign.clear();
            if ((step / 7) % 2 == 1) pool.gpus[3].foreign.push_back({777, "bob"});
            const Plan p = plan(jobs, pool);
            for (const Start& s : p.starts) {
                QueueJob& j = jobs[at[s.job]];
                ASSERT_EQ(j.state, store::JobState::queued);
                for (std::int64_t d : j.after) {
                    const QueueJob& dep = jobs[at[d]];
                    ASSERT_TRUE(is_final(dep.state)) << "seed " << seed << ": job " << j.id << " before " << d;
                    if (j.after_ok) {
                        ASSERT_EQ(dep.state, store::JobState::done);
                    }
                }
                ASSERT_EQ(s.gpus.size(), j.want.gpus);
                ASSERT_EQ(s.cpus.size(), j.want.cpus);
                for (const std::string& g : s.gpus) ASSERT_TRUE(g != "GPU-3" || pool.gpus[3].foreign.empty());
                j.state = store::JobState::running;
                j.gpus_held = s.gpus;
                j.cpus_held = s.cpus;
            }
            for (const auto& [id, why] : p.never) jobs[at[id]].state = store::JobState::cancelled;
            // Invariants over everything running now.
            std::map<std::string, std::vector<const QueueJob*>> on;
            std::set<unsigned> cpus;
            std::uint64_t memory = 0;
            for (const QueueJob& j : jobs) {
                if (j.state != store::JobState::running) continue;
                for (const std::string& g : j.gpus_held) on[g].push_back(&j);
                for (unsigned c : j.cpus_held) ASSERT_TRUE(cpus.insert(c).second) << "CPU " << c << " twice";
                memory += j.want.memory_bytes;
            }
            ASSERT_LE(memory, pool.memory_bytes);
            for (const auto& [g, holders] : on) {
                if (holders.size() == 1) continue;
                std::uint64_t shared = 0;
                for (const QueueJob* h : holders) {
                    ASSERT_TRUE(h->want.share)
                        << "seed " << seed << ": " << g << " serves job " << h->id << " exclusively and others";
                    shared += *h->want.gpu_memory_bytes;
                }
                ASSERT_LE(shared, 72 * GiB) << g;
            }
            // Some running jobs end; most succeed.
            bool open = false;
            for (QueueJob& j : jobs) {
                if (j.state == store::JobState::running && rng() % 3 == 0) {
                    j.state = rng() % 5 == 0 ? store::JobState::failed : store::JobState::done;
                    j.gpus_held.clear();
                    j.cpus_held.clear();
                }
                open = open || !is_final(j.state);
            }
            if (!open) break;
        }
        EXPECT_LT(step, 2000) << "seed " << seed << ": jobs still open after 2000 steps";
        for (const QueueJob& j : jobs) {
            if (j.state != store::JobState::cancelled) continue;
            ASSERT_FALSE(j.after.empty()) << "only a failed dependency can stop a job of this machine's size";
            ASSERT_TRUE(j.after_ok);
        }
    }
}

// --max-parallel: at most N of an array hold resources at once, those running counted; a limited
// element reserves nothing, so the next job in line (another array's, or none) starts.
TEST(QueueScheduler, AnArrayRunsAtMostItsMaxParallelAndReservesNothingBeyond) {
    std::vector<QueueJob> jobs;
    QueueJob held = running(1, {"GPU-0"});
    held.array_id = 1;
    held.max_parallel = 2;
    jobs.push_back(held);
    for (int i = 2; i <= 5; ++i) {
        QueueJob j = job(i, 1);
        j.array_id = 1;
        j.max_parallel = 2;
        jobs.push_back(j);
    }
    jobs.push_back(job(6, 1));  // not of the array
    const Plan p = plan(jobs, four_gpus());
    ASSERT_EQ(p.starts.size(), 2u);
    EXPECT_EQ(p.starts[0].job, 2);  // the second of the array ...
    EXPECT_EQ(p.starts[1].job, 6);  // ... and the other job on the GPUs the array may not take
    EXPECT_EQ(p.waiting.at(3), "waiting for one of the 2 running jobs of array 1 to end (--max-parallel 2)");
    EXPECT_FALSE(p.head.has_value());
    // Without the limit, the array takes every GPU.
    for (QueueJob& j : jobs) j.max_parallel = 0;
    EXPECT_EQ(plan(jobs, four_gpus()).starts.size(), 3u);
}

// baton group: a group's parallel limit counts its starting and running jobs; a group with no limit
// in the pool (removed meanwhile) limits nothing.
TEST(QueueScheduler, AGroupRunsAtMostItsParallelLimit) {
    Pool pool = four_gpus();
    pool.group_parallel["serial"] = 1;
    std::vector<QueueJob> jobs;
    for (int i = 1; i <= 3; ++i) {
        QueueJob j = job(i, 0);
        j.want.cpus = 1;
        j.group = "serial";
        jobs.push_back(j);
    }
    QueueJob free = job(4, 0);
    free.group = "unknown";
    jobs.push_back(free);
    Plan p = plan(jobs, pool);
    ASSERT_EQ(p.starts.size(), 2u);
    EXPECT_EQ(p.starts[0].job, 1);
    EXPECT_EQ(p.starts[1].job, 4);
    EXPECT_EQ(p.waiting.at(2), "waiting for one of the 1 running jobs of group serial to end (its --parallel 1)");
    EXPECT_EQ(p.waiting.at(3), p.waiting.at(2));
    // Job 1 running: still none of the others; once it ended, the next one.
    jobs[0].state = store::JobState::running;
    jobs[0].cpus_held = p.starts[0].cpus;
    jobs[3].state = store::JobState::done;
    p = plan(jobs, pool);
    EXPECT_TRUE(p.starts.empty());
    jobs[0].state = store::JobState::done;
    p = plan(jobs, pool);
    ASSERT_EQ(p.starts.size(), 1u);
    EXPECT_EQ(p.starts[0].job, 2);
    pool.group_parallel["serial"] = 2;
    EXPECT_EQ(plan(jobs, pool).starts.size(), 2u);
}
