// The queue's jobs for people: job ids as typed, the table of `baton queue` with this machine's
// jobs and Slurm's side by side, and `baton show`'s record with a command that needs quoting and
// a name that tries to drive the terminal.
#include <gtest/gtest.h>

#include "core/clock.hpp"
#include "queue/job_text.hpp"
#include "queue/pool_view.hpp"

using namespace baton;
using namespace baton::queue;
using nlohmann::json;

TEST(JobText, JobIdsAsTyped) {
    EXPECT_EQ(*parse_job_id("42"), 42);
    for (const char* bad : {"", "0", "-1", "+3", "x", "4 2", "99999999999999999999"}) {
        Result<std::int64_t> id = parse_job_id(bad);
        ASSERT_FALSE(id.ok()) << bad;
        EXPECT_TRUE(id.error().is(ErrorCode::invalid_argument));
        EXPECT_EQ(id.error().message, std::string("'") + bad + "' is not a job id (baton queue lists them)");
    }
}

TEST(JobText, TheTableWithSlurmRowsBeside) {
    const std::int64_t now = unix_millis();
    JobView running;
    running.id = 7;
    running.owner = "ana";
    running.state = store::JobState::running;
    running.gpu_indices = {0, 1};
    running.gpus = {"GPU-a", "GPU-b"};
    running.cpus = {0, 1, 2, 3};
    running.submit_ms = now - 65000;
    running.start_ms = now - 5000;
    running.name = "resnet";
    JobView queued;
    queued.id = 8;
    queued.owner = "bo";
    queued.state = store::JobState::queued;
    queued.ask = JobView::Ask{};
    queued.ask->want.gpus = 2;
    queued.ask->want.cpus = 8;
    queued.submit_ms = now - 3 * 3600 * 1000;
    queued.name = "bert\x1b[31m";
    const json slurm = {{"id", "slurm:41"}, {"slurm_id", 41},   {"owner", "ana"}, {"state", "running"},
                        {"gpus_count", 4},  {"cpus_count", 32}, {"name", "big"}};
    const std::string t = jobs_table({job_row(running), job_row(queued), slurm_row(slurm)});
    EXPECT_EQ(t.rfind("ID        OWNER  STATE    GPUS  CPUS  WAITED  RAN  NAME\n", 0), 0u) << t;
    EXPECT_NE(t.find("7         ana    running  0,1   4     1m00s   5s   resnet\n"), std::string::npos) << t;
    EXPECT_NE(t.find("8         bo     queued   (2)   (8)   3h00m   -    bert?[31m\n"), std::string::npos) << t;
    EXPECT_NE(t.find("slurm:41  ana    running  4     32    -       -    big\n"), std::string::npos) << t;
}

namespace {

JobView ended_job() {
    JobView j;
    j.id = 12;
    j.name = "run\x07";
    j.owner = "ana";
    j.owner_uid = 1000;
    j.state = store::JobState::failed;
    j.exit_status = 3;
    j.argv = {"python3", "train.py", "--note", "two words", "it's"};
    j.cwd = "/work";
    j.ask = JobView::Ask{};
    j.ask->want.gpus = 1;
    j.ask->want.gpu_memory_bytes = 20ull << 30;
    j.ask->want.share = true;
    j.ask->want.cpus = 4;
    j.ask->want.memory_bytes = 1536ull << 20;
    j.ask->retries = 1;
    j.ask->on_oom = OnOom::retry;
    j.priority = 2;
    j.after = {3, 4};
    j.after_ok = true;
    j.attempt = 2;
    j.submit_ms = 1000;
    j.start_ms = 61000;
    j.end_ms = 3661000;
    j.run_id = 99;
    return j;
}

}  // namespace

TEST(JobText, ShowQuotesTheCommandAndEscapesNames) {
    const std::string t = job_text(ended_job());
    EXPECT_NE(t.find("job:       12  run?\n"), std::string::npos) << t;
    EXPECT_NE(t.find("owner:     ana (uid 1000)\n"), std::string::npos);
    EXPECT_NE(t.find("state:     failed, exit status 3\n"), std::string::npos);
    EXPECT_NE(t.find("command:   python3 train.py --note 'two words' 'it'\\''s'\n"), std::string::npos) << t;
    EXPECT_NE(t.find("asks:      1 GPU(s), 20 GiB each, shared, 4 CPU(s), 1.5 GiB memory\n"), std::string::npos) << t;
    EXPECT_NE(t.find("after:     3,4 (each must succeed)\n"), std::string::npos);
    EXPECT_NE(t.find("attempt:   2 (retries allowed: 1, on out of memory: retry)\n"), std::string::npos);
    EXPECT_NE(t.find("waited:    1m00s\n"), std::string::npos);
    EXPECT_NE(t.find("ran:       1h00m\n"), std::string::npos);
    EXPECT_NE(t.find("run:       99 (baton report 99)\n"), std::string::npos);
}

// A paused job: "paused" in the queue's STATE column and in show, with how to resume it; its state
// in JSON stays running, with paused_ms beside it.
TEST(JobText, APausedJobSaysSoAndHowToResume) {
    JobView j = ended_job();
    j.state = store::JobState::running;
    j.exit_status.reset();
    j.end_ms.reset();
    j.paused_ms = unix_millis() - 125000;
    EXPECT_EQ(job_row(j).state, "paused");
    const std::string t = job_text(j);
    EXPECT_NE(t.find("state:     running, paused for 2m05s (baton resume 12)\n"), std::string::npos) << t;
    const json encoded = job_view_json(j);
    EXPECT_EQ(encoded["state"], "running");
    EXPECT_EQ(encoded["paused_ms"], *j.paused_ms);
    Result<JobView> back = parse_job_view(encoded);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->paused_ms, j.paused_ms);
    json bad = encoded;
    bad["paused_ms"] = "soon";
    EXPECT_FALSE(parse_job_view(bad).ok());
    j.paused_ms.reset();
    EXPECT_EQ(job_row(j).state, "running");
    EXPECT_FALSE(job_view_json(j).contains("paused_ms"));
}

TEST(JobView, RoundTripAndWrongTypesNamed) {
    const JobView j = ended_job();
    const json encoded = job_view_json(j);
    EXPECT_EQ(encoded["state"], "failed");
    EXPECT_EQ(encoded["want"]["gpu_memory_bytes"], 20ull << 30);
    Result<JobView> back = parse_job_view(encoded);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(job_view_json(*back), encoded);
    EXPECT_EQ(back->state, store::JobState::failed);
    EXPECT_EQ(back->ask->on_oom, OnOom::retry);
    EXPECT_EQ(back->after, j.after);
    EXPECT_FALSE(back->pid);
    // A job without a readable request has no "want": no ask.
    JobView bare;
    bare.id = 1;
    bare.state = store::JobState::lost;
    Result<JobView> b = parse_job_view(job_view_json(bare));
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_FALSE(b->ask);
    // Hostile answers: one error naming the field.
    auto error_of = [&](json o) {
        Result<JobView> r = parse_job_view(o);
        EXPECT_FALSE(r.ok());
        return r.ok() ? std::string() : r.error().message;
    };
    json bad = encoded;
    bad["state"] = "paused";
    EXPECT_EQ(error_of(bad), "the job's state \"paused\" is not one baton knows");
    bad = encoded;
    bad["id"] = "twelve";
    EXPECT_EQ(error_of(bad), "the job's \"id\" has the wrong type");
    bad = encoded;
    bad.erase("argv");
    EXPECT_EQ(error_of(bad), "the job has no \"argv\"");
    bad = encoded;
    bad["want"]["cpus"] = -1;
    EXPECT_EQ(error_of(bad), "the job's \"cpus\" has the wrong type");
    bad = encoded;
    bad["want"] = 3;
    EXPECT_EQ(error_of(bad), "the job's \"want\" has the wrong type");
    EXPECT_EQ(error_of(json::array()), "a job is a JSON object");
}

TEST(JobText, AnArraysElementAndAGroupAreShownAndRoundTrip) {
    JobView j = ended_job();
    j.array_id = 40;
    j.array_index = 7;
    j.ask->group = "sweeps";
    j.ask->max_parallel = 4;
    EXPECT_EQ(job_row(j).name, "[7] run\x07");
    const std::string t = job_text(j);
    EXPECT_NE(t.find("array:     40, index 7 (at most 4 of it at once)\n"), std::string::npos) << t;
    EXPECT_NE(t.find("group:     sweeps\n"), std::string::npos) << t;
    const json encoded = job_view_json(j);
    EXPECT_EQ(encoded["array_id"], 40);
    EXPECT_EQ(encoded["array_index"], 7);
    EXPECT_EQ(encoded["group"], "sweeps");
    EXPECT_EQ(encoded["max_parallel"], 4);
    Result<JobView> back = parse_job_view(encoded);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(job_view_json(*back), encoded);
    json bad = encoded;
    bad["array_index"] = "seven";
    EXPECT_FALSE(parse_job_view(bad).ok());
    bad = encoded;
    bad["group"] = 3;
    EXPECT_FALSE(parse_job_view(bad).ok());
    // Not an array's, in no group: no such lines or fields.
    const JobView plain = ended_job();
    EXPECT_EQ(job_text(plain).find("array:"), std::string::npos);
    EXPECT_EQ(job_text(plain).find("group:"), std::string::npos);
    EXPECT_FALSE(job_view_json(plain).contains("array_id"));
    EXPECT_FALSE(job_view_json(plain).contains("group"));
}

TEST(PoolView, ThePoolInTheOrderGivenWithItsHoldersAndBack) {
    Pool pool;
    for (unsigned i = 0; i < 3; ++i) {
        PoolGpu g;
        g.index = i;
        g.uuid = "GPU-" + std::to_string(i);
        g.memory_total_bytes = 80ull << 30;
        g.memory_used_bytes = i == 2 ? 30ull << 30 : 0;
        g.preference = i == 2 ? 0 : 1;  // [queue] prefer = "2"
        pool.gpus.push_back(g);
    }
    pool.gpus[0].foreign.push_back({4411, "alice\x1b[2J"});
    const PoolView v = pool_view(pool, {{7, {"GPU-2"}}, {8, {"GPU-9"}}});
    ASSERT_EQ(v.gpus.size(), 3u);
    EXPECT_EQ(v.gpus[0].index, 2u);
    EXPECT_EQ(v.gpus[0].jobs, std::vector<std::int64_t>{7});
    EXPECT_EQ(v.gpus[1].index, 0u);
    const std::string t = pool_table(v);
    EXPECT_NE(t.find("2    GPU-2  30.0/80.0 GiB  held     job 7\n"), std::string::npos) << t;
    EXPECT_NE(t.find("0    GPU-0  0.0/80.0 GiB   foreign  pid 4411 (alice?[2J)\n"), std::string::npos) << t;
    EXPECT_NE(t.find("1    GPU-1  0.0/80.0 GiB   free     -\n"), std::string::npos) << t;
    Result<PoolView> back = parse_pool_view(pool_view_json(v));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(pool_view_json(*back), pool_view_json(v));
    for (const char* bad : {R"({})", R"({"gpus": 1})", R"({"gpus": [{"index": -1}]})",
                            R"({"gpus": [{"index": 0, "uuid": "x", "memory_total_bytes": 1, "memory_used_bytes": 0,
                                "jobs": ["a"], "foreign": []}]})",
                            R"({"gpus": [{"index": 0, "uuid": "x", "memory_total_bytes": 1, "memory_used_bytes": 0,
                                "jobs": [], "foreign": [{"pid": -3, "user": "u"}]}]})",
                            R"({"gpus_known": "no", "gpus": []})"})
        EXPECT_FALSE(parse_pool_view(json::parse(bad)).ok()) << bad;
    PoolView unknown;
    unknown.gpus_known = false;
    unknown.problem = "NVML did not answer";
    EXPECT_EQ(pool_table(unknown), "the queue cannot read the GPUs: NVML did not answer\n");
}
