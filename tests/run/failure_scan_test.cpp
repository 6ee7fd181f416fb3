// PyTorch's failure messages recognised in a command's stderr, however the text is chunked.
#include <gtest/gtest.h>

#include "run/failure_scan.hpp"

using namespace baton;
using namespace baton::run;

namespace {

std::vector<std::string> rules(const FailureScanner& s) {
    std::vector<std::string> r;
    for (const diagnose::Finding& f : s.findings()) r.push_back(f.rule);
    return r;
}

void feed_in_pieces(FailureScanner& s, const std::string& text, std::size_t piece) {
    for (std::size_t i = 0; i < text.size(); i += piece) s.feed(std::string_view(text).substr(i, piece));
}

}  // namespace

TEST(FailureScan, CudaOutOfMemoryOldAndNewWording) {
    for (const std::string msg :
         {"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 13.01 GiB "
          "already allocated; 1.50 GiB free; 13.50 GiB reserved in total by PyTorch)\n",
          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
          "79.15 GiB of which 3.19 MiB is free.\n",
          "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 MiB\n"}) {
        FailureScanner s;
        feed_in_pieces(s, "epoch 3: 100%|##########| 500/500\rTraceback (most recent call last):\n" + msg, 7);
        ASSERT_EQ(rules(s), std::vector<std::string>{"cuda_oom"}) << msg;
        EXPECT_EQ(s.findings()[0].severity, diagnose::Severity::critical);
        EXPECT_NE(s.findings()[0].evidence[0].threshold.find("CUDA out of memory"), std::string::npos);
        EXPECT_EQ(s.findings()[0].doc, "docs/findings.md#cuda_oom");
    }
}

TEST(FailureScan, DataLoaderWorkersKilledOrOutOfSharedMemory) {
    FailureScanner s;
    s.feed("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed. \n");
    EXPECT_EQ(rules(s), std::vector<std::string>{"host_oom_kill"});
    FailureScanner b;
    b.feed(
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
        "(shm).\nRuntimeError: DataLoader worker (pid 77) is killed by signal: Bus error. It is possible that "
        "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.\n");
    EXPECT_EQ(rules(b), std::vector<std::string>{"dataloader_bus_error"});
}

TEST(FailureScan, OrdinaryOutputAndHostileInput) {
    FailureScanner s;
    s.feed("loss 0.31 acc 0.92\nmemory: 70 GiB used\nOut of curiosity, CUDA memory is fine\n");
    s.feed(std::string(1 << 20, 'x'));  // a megabyte without a newline
    s.feed("\n");
    s.feed(std::string("\0\xff\x1b[2J", 6));
    EXPECT_TRUE(s.findings().empty());
    s.feed("CUDA out of memory\nCUDA out of memory\n");
    EXPECT_EQ(s.findings().size(), 1u);  // one finding per kind
}
