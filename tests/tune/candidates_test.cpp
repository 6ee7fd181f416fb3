#include "tune/candidates.hpp"

#include <gtest/gtest.h>

using namespace baton::tune;

namespace {

BaselineFacts data_bound_cpu_job() {
    BaselineFacts b;
    b.loader = LoaderFacts{};
    b.loader->batch_size = 32;
    b.loader->batches = 1000;
    b.process = ProcessFacts{};
    b.process->torch_threads = 8;
    b.data_wait_share = 0.8;
    b.cpus = 8;
    b.trial_steps = 30;
    return b;
}

bool has(const std::vector<Candidate>& cs, const std::string& label_text) {
    for (const Candidate& c : cs)
        if (label(c.settings) == label_text) return true;
    return false;
}

}  // namespace

TEST(TuneCandidates, AJobWaitingForDataGetsWorkers) {
    auto cs = candidates(data_bound_cpu_job());
    ASSERT_FALSE(cs.empty());
    EXPECT_EQ(label(cs[0].settings), "num_workers=2");
    EXPECT_NE(cs[0].reason.find("waits for data 80 %"), std::string::npos) << cs[0].reason;
    EXPECT_TRUE(has(cs, "num_workers=8"));
    // On the CPU the training's 8 threads would compete with the workers: fewer threads beside them.
    EXPECT_TRUE(has(cs, "num_workers=2 threads=6")) << label(cs[1].settings);
    // No GPU: no pin_memory, no cuDNN, no precision.
    for (const Candidate& c : cs) {
        EXPECT_FALSE(c.settings.pin_memory) << label(c.settings);
        EXPECT_FALSE(c.settings.autocast) << label(c.settings);
    }
    EXPECT_LE(cs.size(), 5u);
}

TEST(TuneCandidates, AComputeBoundCpuJobGetsNothingToTry) {
    BaselineFacts b = data_bound_cpu_job();
    b.data_wait_share = 0.02;
    b.process->torch_threads = 8;
    EXPECT_TRUE(candidates(b).empty());
}

TEST(TuneCandidates, WorkersAlreadyThereGetPrefetchAndPersistenceOnShortEpochs) {
    BaselineFacts b = data_bound_cpu_job();
    b.loader->num_workers = 2;
    b.loader->batches = 20;  // an epoch is shorter than two trials' steps: workers restart each epoch
    auto cs = candidates(b);
    EXPECT_TRUE(has(cs, "num_workers=4 persistent_workers=True"));
    EXPECT_TRUE(has(cs, "prefetch_factor=4"));
    EXPECT_TRUE(has(cs, "persistent_workers=True"));
}

TEST(TuneCandidates, AnAmpereGpuGetsPinnedMemoryCudnnTf32AndBfloat16) {
    BaselineFacts b = data_bound_cpu_job();
    b.process->cuda = true;
    b.process->compute_major = 8;
    b.loader->num_workers = 8;  // as many as the CPUs: no more workers to try
    b.loader->prefetch_factor = 4;
    auto cs = candidates(b, 10);
    EXPECT_TRUE(has(cs, "pin_memory=True"));
    EXPECT_TRUE(has(cs, "cudnn_benchmark=True"));
    EXPECT_TRUE(has(cs, "tf32=True"));
    EXPECT_TRUE(has(cs, "autocast=bfloat16"));
    EXPECT_FALSE(has(cs, "num_workers=8"));
    // A Volta has neither TF32 nor bfloat16 tensor cores.
    b.process->compute_major = 7;
    cs = candidates(b, 10);
    EXPECT_FALSE(has(cs, "tf32=True"));
    EXPECT_FALSE(has(cs, "autocast=bfloat16"));
}

TEST(TuneCandidates, NearTheMemorysEndExpandableSegmentsAndTheBatchOnlyWhenAllowed) {
    BaselineFacts b = data_bound_cpu_job();
    b.data_wait_share = 0;
    b.process->cuda = true;
    b.process->cudnn_benchmark = true;
    b.gpu_memory_peak_share = 0.93;
    auto cs = candidates(b);
    ASSERT_EQ(cs.size(), 1u);
    EXPECT_EQ(label(cs[0].settings), "expandable_segments=True");
    b.gpu_memory_peak_share = 0.30;
    EXPECT_TRUE(candidates(b).empty());
    b.allow_batch_size = true;
    cs = candidates(b);
    ASSERT_EQ(cs.size(), 1u);
    EXPECT_EQ(label(cs[0].settings), "batch_size=64");
}

TEST(TuneCandidates, OversubscribedCpusGetFewerThreads) {
    BaselineFacts b = data_bound_cpu_job();
    b.data_wait_share = 0.05;
    b.loader->num_workers = 4;
    b.cpu_busy_share = 0.97;
    auto cs = candidates(b);
    ASSERT_EQ(cs.size(), 1u);
    EXPECT_EQ(label(cs[0].settings), "threads=4");
}

TEST(TuneCandidates, IdleCpusGetMoreThreads) {
    // PyTorch on one thread of 8 CPUs (OMP_NUM_THREADS=1 from a launcher), the job using an eighth of them.
    BaselineFacts b = data_bound_cpu_job();
    b.data_wait_share = 0.02;
    b.process->torch_threads = 1;
    b.cpu_busy_share = 0.13;
    auto cs = candidates(b);
    ASSERT_EQ(cs.size(), 1u);
    EXPECT_EQ(label(cs[0].settings), "threads=8");
    EXPECT_NE(cs[0].reason.find("computes on 1 thread(s) while the job used 13 % of the 8 CPU(s)"), std::string::npos)
        << cs[0].reason;
    // Its workers keep their CPUs.
    b.loader->num_workers = 2;
    cs = candidates(b);
    ASSERT_EQ(cs.size(), 1u);
    EXPECT_EQ(label(cs[0].settings), "threads=6");
    EXPECT_NE(cs[0].reason.find("(2 of them kept for its worker(s))"), std::string::npos) << cs[0].reason;
    // Busy CPUs, a GPU's job, or every CPU already computing: nothing.
    b.cpu_busy_share = 0.8;
    EXPECT_TRUE(candidates(b).empty());
    b.cpu_busy_share = 0.13;
    b.process->cuda = true;
    EXPECT_TRUE(has(candidates(b), "cudnn_benchmark=True"));
    EXPECT_FALSE(has(candidates(b), "threads=6"));
    b.process->cuda = false;
    b.process->torch_threads = 6;
    EXPECT_TRUE(candidates(b).empty());
}
