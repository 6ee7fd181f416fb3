// baton submit's flags -> the submission, for this machine's agent and for sbatch: each refusal
// that needs no agent, with its one line, and what the flags become.
#include <gtest/gtest.h>

#include "queue/submit_flags.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

std::string refusal(const SubmitFlags& f) {
    Result<Submission> s = local_submission(f, {"python3", "train.py"}, "/work", {}, 0);
    EXPECT_FALSE(s.ok());
    if (s.ok()) return "";
    EXPECT_TRUE(s.error().is(ErrorCode::invalid_argument)) << s.error().message;
    return s.error().message;
}

std::string slurm_refusal(const SubmitFlags& f) {
    Result<SlurmSubmit> s = slurm_submission(f, {"python3", "train.py"}, "/work", "/usr/bin/baton");
    EXPECT_FALSE(s.ok());
    if (s.ok()) return "";
    EXPECT_TRUE(s.error().is(ErrorCode::invalid_argument)) << s.error().message;
    return s.error().message;
}

}  // namespace

TEST(SubmitFlags, WhatTheAgentIsSent) {
    SubmitFlags f;
    f.gpus = 2;
    f.gpu_mem = "20G";
    f.mem = "64G";
    f.cpus = 8;
    f.after = "3,4:ok";
    f.name = "resnet";
    f.priority = 5;
    f.share = true;
    f.retries = 2;
    f.on_oom = "retry";
    Result<Submission> s = local_submission(f, {"python3", "train.py"}, "/work", {{"HOME", "/home/u"}}, 0);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->argv, (std::vector<std::string>{"python3", "train.py"}));
    EXPECT_EQ(s->cwd, "/work");
    EXPECT_EQ(s->env, (std::vector<std::pair<std::string, std::string>>{{"HOME", "/home/u"}}));
    EXPECT_EQ(s->name, "resnet");
    EXPECT_EQ(s->priority, 5);
    EXPECT_EQ(s->request.want.gpus, 2u);
    EXPECT_EQ(s->request.want.gpu_memory_bytes, std::uint64_t{20} << 30);
    EXPECT_EQ(s->request.want.memory_bytes, std::uint64_t{64} << 30);
    EXPECT_EQ(s->request.want.cpus, 8u);
    EXPECT_FALSE(s->default_cpus);
    EXPECT_TRUE(s->request.want.share);
    EXPECT_EQ(s->request.retries, 2u);
    EXPECT_EQ(s->request.on_oom, OnOom::retry);
    EXPECT_EQ(s->after, (std::vector<std::int64_t>{3, 4}));
    EXPECT_TRUE(s->after_ok);
    // Defaults: the agent picks the CPUs; --gpu-mem auto with a name.
    SubmitFlags d;
    d.gpus = 1;
    d.gpu_mem = "auto";
    d.name = "resnet";
    s = local_submission(d, {"true"}, "/", {}, 0);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_TRUE(s->default_cpus);
    EXPECT_TRUE(s->request.gpu_memory_auto);
    EXPECT_EQ(s->gpu_memory_text, "auto");
}

TEST(SubmitFlags, RefusedBeforeAnyAgentIsAsked) {
    SubmitFlags f;
    f.gpus = 1;
    f.gpu = "0";
    EXPECT_EQ(refusal(f), "--gpus and --gpu: give one (a count, or the GPUs themselves)");
    f = {};
    f.gpu_mem = "auto";
    EXPECT_EQ(refusal(f), "--gpu-mem auto reads the peak of earlier runs with the same --name: give --name");
    f.gpu_mem = "lots";
    EXPECT_EQ(refusal(f), "--gpu-mem lots: a size like 20G, 512M or 1.5T, or auto");
    f = {};
    f.mem = "64Q";
    EXPECT_EQ(refusal(f), "--mem 64Q: a size like 64G or 512M");
    f = {};
    f.after = "x";
    EXPECT_EQ(refusal(f).rfind("--after x: ", 0), 0u);
    f = {};
    f.dry_run = true;
    EXPECT_EQ(refusal(f), "--dry-run goes with --slurm (this machine's queue runs jobs on this machine only)");
    f = {};
    f.nodes = 2;
    EXPECT_EQ(refusal(f), "--nodes goes with --slurm (this machine's queue runs jobs on this machine only)");
    f = {};
    f.at = "02:00";
    f.delay = "1h";
    EXPECT_EQ(refusal(f), "--at and --delay: give one (a time, or a wait from now)");
    f.at.clear();
    f.delay = "later";
    EXPECT_EQ(refusal(f).rfind("--delay later: ", 0), 0u);
    f.delay = "90m";
    Result<Submission> delayed = local_submission(f, {"true"}, "/", {}, 1000);
    ASSERT_TRUE(delayed.ok());
    EXPECT_EQ(delayed->request.not_before_ms, 1000 + 90 * 60000);
    f.slurm = true;
    EXPECT_FALSE(slurm_submission(f, {"true"}, "/", "/usr/bin/baton").ok()) << "sbatch has its own --begin";
    // --share without --gpu-mem cannot be packed by memory on any machine.
    f = {};
    f.gpus = 1;
    f.share = true;
    EXPECT_FALSE(refusal(f).empty());
    // CPUs and memory are the agent's to judge: the client knows no machine's.
    f = {};
    f.cpus = 2;
    f.mem = "64G";
    EXPECT_TRUE(local_submission(f, {"true"}, "/", {}, 0).ok()) << "a 2-CPU box runs --cpus 2";
}

TEST(SubmitFlags, WhatSbatchIsSent) {
    SubmitFlags f;
    f.nodes = 2;
    f.gpus = 4;
    f.cpus = 16;
    f.mem = "128G";
    f.after = "41:ok";
    f.retries = 1;
    f.hold = true;
    Result<SlurmSubmit> s = slurm_submission(f, {"python3", "train.py"}, "/work", "/usr/bin/baton");
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->name, "python3 train.py");  // the command's name when --name is not given
    EXPECT_EQ(s->nodes, 2u);
    EXPECT_EQ(s->gpus_per_node, 4u);
    EXPECT_EQ(s->memory_bytes, std::uint64_t{128} << 30);
    EXPECT_EQ(s->after, (std::vector<std::int64_t>{41}));
    EXPECT_TRUE(s->requeue);
    EXPECT_TRUE(s->hold);
    EXPECT_EQ(s->baton, "/usr/bin/baton");

    SubmitFlags g;
    g.gpu = "0";
    EXPECT_EQ(slurm_refusal(g), "--slurm with --gpu: Slurm chooses the nodes' GPUs; ask for a count with --gpus N");
    g = {};
    g.share = true;
    EXPECT_EQ(slurm_refusal(g), "--slurm with --share: Slurm gives each job whole GPUs");
    g = {};
    g.priority = 3;
    EXPECT_EQ(slurm_refusal(g), "--slurm with --priority: Slurm orders its own queue (its fair share)");
    g = {};
    g.on_oom = "retry";
    EXPECT_EQ(slurm_refusal(g).rfind("--slurm with --on-oom retry: ", 0), 0u);
    g = {};
    g.after = "a,b";
    EXPECT_NE(slurm_refusal(g).find("(Slurm job ids)"), std::string::npos);
}

TEST(SubmitFlags, AnArrayAndAGroup) {
    SubmitFlags f;
    f.array = "1-3%2";
    f.group = "sweeps";
    Result<Submission> s = local_submission(f, {"train", "{}"}, "/w", {}, 0);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->array.indices, (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ(s->request.max_parallel, 2u);
    EXPECT_EQ(s->request.group, "sweeps");
    f.array = "1-3";
    f.max_parallel = 5;
    EXPECT_EQ(local_submission(f, {"train"}, "/w", {}, 0)->request.max_parallel, 5u);
    f = {};
    f.array_file = "sweep.txt";
    f.array_file_text = "--lr 1\n--lr 2\n";
    s = local_submission(f, {"train"}, "/w", {}, 0);
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s->array.append);  // no {} in the command
    EXPECT_EQ(s->array.values, (std::vector<std::string>{"--lr 1", "--lr 2"}));
    EXPECT_FALSE(local_submission(f, {"train", "{}"}, "/w", {}, 0)->array.append);

    f.array = "1-2";
    EXPECT_EQ(refusal(f), "--array and --array-file: give one (indices, or a file of one job per line)");
    f = {};
    f.max_parallel = 2;
    EXPECT_EQ(refusal(f), "--max-parallel goes with --array or --array-file (a group's limit: --group)");
    f.array = "1-4%3";
    EXPECT_EQ(refusal(f), "--array 1-4%3 and --max-parallel 2: two limits (give one)");
    f = {};
    f.array = "4-1";
    EXPECT_EQ(refusal(f).rfind("--array 4-1: ", 0), 0u);
    f = {};
    f.array_file = "empty.txt";
    EXPECT_EQ(refusal(f).rfind("--array-file empty.txt: no lines", 0), 0u);
    for (const char* bad : {"", "-x", "a b", "x/y", "ü", "a;rm"}) {
        f = {};
        f.group = bad;
        if (!*bad) continue;  // (no --group at all)
        EXPECT_EQ(refusal(f).rfind("--group: group '", 0), 0u) << bad;
    }
    f = {};
    f.group = std::string(65, 'g');
    EXPECT_FALSE(refusal(f).empty());
    f.group = std::string(64, 'g');
    EXPECT_TRUE(local_submission(f, {"true"}, "/", {}, 0).ok());

    f = {};
    f.array = "1-2";
    EXPECT_EQ(slurm_refusal(f).rfind("--slurm with --array", 0), 0u);
    f = {};
    f.group = "g";
    EXPECT_EQ(slurm_refusal(f), "--slurm with --group: the groups are this machine's queue's");
}
