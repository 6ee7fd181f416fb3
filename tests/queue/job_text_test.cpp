// The queue's jobs for people: job ids as typed, the table of `baton queue` with this machine's
// jobs and Slurm's side by side, and `baton show`'s record with a command that needs quoting and
// a name that tries to drive the terminal.
#include <gtest/gtest.h>

#include "core/clock.hpp"
#include "queue/job_text.hpp"

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
    const json jobs = json::array({
        {{"id", 7},
         {"owner", "ana"},
         {"state", "running"},
         {"gpu_indices", {0, 1}},
         {"gpus", {"GPU-a", "GPU-b"}},
         {"cpus", {0, 1, 2, 3}},
         {"submit_ms", now - 65000},
         {"start_ms", now - 5000},
         {"name", "resnet"}},
        {{"id", 8},
         {"owner", "bo"},
         {"state", "queued"},
         {"want", {{"gpus", 2}, {"cpus", 8}}},
         {"submit_ms", now - 3 * 3600 * 1000},
         {"name", "bert\x1b[31m"}},
        {{"id", "slurm:41"},
         {"slurm_id", 41},
         {"owner", "ana"},
         {"state", "running"},
         {"gpus_count", 4},
         {"cpus_count", 32},
         {"name", "big"}},
    });
    const std::string t = jobs_table(jobs);
    EXPECT_EQ(t.rfind("ID        OWNER  STATE    GPUS  CPUS  WAITED  RAN  NAME\n", 0), 0u) << t;
    EXPECT_NE(t.find("7         ana    running  0,1   4     1m00s   5s   resnet\n"), std::string::npos) << t;
    EXPECT_NE(t.find("8         bo     queued   (2)   (8)   3h00m   -    bert?[31m\n"), std::string::npos) << t;
    EXPECT_NE(t.find("slurm:41  ana    running  4     32    -       -    big\n"), std::string::npos) << t;
}

TEST(JobText, ShowQuotesTheCommandAndEscapesNames) {
    const json job = {{"id", 12},
                      {"name", "run\x07"},
                      {"owner", "ana"},
                      {"owner_uid", 1000},
                      {"state", "failed"},
                      {"exit_status", 3},
                      {"argv", {"python3", "train.py", "--note", "two words", "it's"}},
                      {"cwd", "/work"},
                      {"want",
                       {{"gpus", 1},
                        {"gpu_memory_bytes", 20ull << 30},
                        {"share", true},
                        {"cpus", 4},
                        {"memory_bytes", 1536ull << 20}}},
                      {"priority", 2},
                      {"after", {3, 4}},
                      {"after_ok", true},
                      {"attempt", 2},
                      {"retries", 1},
                      {"on_oom", "retry"},
                      {"submit_ms", 1000},
                      {"start_ms", 61000},
                      {"end_ms", 3661000},
                      {"run_id", 99}};
    const std::string t = job_text(job);
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
