// What baton makes of Slurm's answers, on recorded answers of its client commands: squeue then
// sacct, the exit code from scontrol, sbatch's id and refusals, the errors that scancel prints with
// a zero exit, a missing or silent Slurm, `baton queue`'s rows, logs and wait.
#include "queue/slurm_client.hpp"

#include <gtest/gtest.h>
#include <map>

#include "test_support.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

// Answers by command name (argv[0]); every call is written down as "argv joined by spaces".
struct FakeSlurm {
    std::map<std::string, std::vector<Result<ProgramOutput>>> answers;  // popped front; the last one stays
    std::vector<std::string> calls;
    std::string last_input;

    void answer(const std::string& program, std::string out, int exit_status = 0, std::string err = "") {
        answers[program].push_back(ProgramOutput{std::move(out), std::move(err), exit_status, false});
    }
    SlurmClient client() {
        return SlurmClient([this](const std::vector<std::string>& argv, const std::string& input) {
            std::string call;
            for (const std::string& a : argv) call += (call.empty() ? "" : " ") + a;
            calls.push_back(call);
            last_input = input;
            auto it = answers.find(argv[0]);
            if (it == answers.end() || it->second.empty())
                return Result<ProgramOutput>(ProgramOutput{"", "cannot run " + argv[0] + ": No such file", 127, false});
            Result<ProgramOutput> r = it->second.front();
            if (it->second.size() > 1) it->second.erase(it->second.begin());
            return r;
        });
    }
};

const char* kRunning =
    "41|RUNNING|alice|2026-12-01T10:00:00|2026-12-01T10:00:05|2026-12-02T10:00:05|gres:gpu:2|16|None|/home/a|train\n";
const char* kCompleted =
    "43|COMPLETED|alice|2026-12-01T09:00:00|2026-12-01T09:00:01|2026-12-01T09:30:00|N/A|1|None|/h|done\n";
const char* kSacctFailed = "44|FAILED|alice|2026-12-01T10:00:00|Unknown|Unknown|2|3:0|/h|y\n";

}  // namespace

TEST(SlurmClient, SqueueFirstThenSacctForTheRest) {
    FakeSlurm s;
    s.answer("squeue", kRunning);
    s.answer("sacct", kSacctFailed);
    SlurmLookup found = s.client().lookup({41, 44, 45});
    EXPECT_FALSE(found.problem);
    ASSERT_EQ(found.jobs.size(), 2u);
    EXPECT_EQ(found.jobs.at(41).state, "running");
    EXPECT_EQ(found.jobs.at(44).exit_code, std::optional<int>(3));
    ASSERT_EQ(s.calls.size(), 2u);
    EXPECT_NE(s.calls[0].find("-j 41,44,45"), std::string::npos) << s.calls[0];
    EXPECT_NE(s.calls[1].find("-j 44,45"), std::string::npos) << "sacct is asked only for what squeue lacks";

    // Every id unknown to slurmctld: squeue says so and exits 1, which is an answer.
    FakeSlurm gone;
    gone.answer("squeue", "", 1, "slurm_load_jobs error: Invalid job id specified\n");
    gone.answer("sacct", "", 1, "sacct: error: Problem talking to the database\n");
    found = gone.client().lookup({7});
    EXPECT_FALSE(found.problem) << "no accounting is no failure";
    EXPECT_TRUE(found.jobs.empty());
}

TEST(SlurmClient, ASlurmThatCannotBeAskedIsTheProblem) {
    FakeSlurm none;  // no client commands installed
    SlurmLookup found = none.client().lookup({1});
    ASSERT_TRUE(found.problem);
    EXPECT_TRUE(found.problem->is(ErrorCode::not_found));
    EXPECT_NE(found.problem->message.find("Debian's slurm-client"), std::string::npos) << found.problem->message;

    FakeSlurm down;
    down.answer("squeue", "", 1, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n");
    found = down.client().lookup({1});
    ASSERT_TRUE(found.problem);
    EXPECT_EQ(found.problem->message,
              "squeue: slurm_load_jobs error: Unable to contact slurm controller (connect failure)");

    SlurmClient silent([](const std::vector<std::string>&, const std::string&) -> Result<ProgramOutput> {
        return make_error(ErrorCode::timed_out, "squeue did not answer within 30 s");
    });
    Result<SlurmJob> j = silent.job(5);
    ASSERT_FALSE(j.ok());
    EXPECT_TRUE(j.is(ErrorCode::timed_out));
}

TEST(SlurmClient, AnEndedJobsExitCodeComesFromScontrol) {
    FakeSlurm s;
    s.answer("squeue", kCompleted);
    s.answer("scontrol", "JobId=43 JobName=done\n   JobState=COMPLETED Reason=None ExitCode=0:9\n");
    Result<SlurmJob> j = s.client().job(43);
    ASSERT_TRUE(j.ok()) << j.error().message;
    EXPECT_EQ(j->exit_code, std::optional<int>(128 + 9));

    FakeSlurm running;
    running.answer("squeue", kRunning);
    j = running.client().job(41);
    ASSERT_TRUE(j.ok());
    EXPECT_FALSE(j->exit_code);
    EXPECT_EQ(running.calls.size(), 1u) << "a running job has no exit code to ask for";

    FakeSlurm forgotten;
    forgotten.answer("squeue", "", 1, "Invalid job id specified\n");
    forgotten.answer("sacct", "");
    j = forgotten.client().job(99);
    ASSERT_FALSE(j.ok());
    EXPECT_TRUE(j.is(ErrorCode::not_found));
    EXPECT_EQ(j.error().message, "Slurm does not know job 99 any more (and keeps no accounting that sacct could read)");
}

TEST(SlurmClient, ScontrolFieldsAndExitCodes) {
    const std::map<std::string, std::string> f = parse_scontrol_fields(
        "JobId=7 JobName=my run\n   UserId=alice(1000) JobState=RUNNING Reason=None\n   Command=/bin/sh -c 'x y'\n"
        "=odd noise\n");
    EXPECT_EQ(f.at("JobId"), "7");
    EXPECT_EQ(f.at("JobName"), "my run");
    EXPECT_EQ(f.at("Command"), "/bin/sh -c 'x y'");
    EXPECT_EQ(f.at("UserId"), "alice(1000)");
    EXPECT_TRUE(parse_scontrol_fields("").empty());
    EXPECT_EQ(parse_slurm_exit_code("3:0"), std::optional<int>(3));
    EXPECT_EQ(parse_slurm_exit_code("0:15"), std::optional<int>(143));
    EXPECT_EQ(parse_slurm_exit_code("2"), std::optional<int>(2));
    for (const char* bad : {"", ":", "a:b", "1:", "256:0", "0:128", "-1:0", "99999999999999999999:0"})
        EXPECT_FALSE(parse_slurm_exit_code(bad)) << bad;
}

TEST(SlurmClient, SubmitAndActions) {
    FakeSlurm s;
    s.answer("sbatch", "4711;cluster\n");
    Result<std::int64_t> id = s.client().submit("#!/bin/sh\nexec true\n");
    ASSERT_TRUE(id.ok()) << id.error().message;
    EXPECT_EQ(*id, 4711);
    EXPECT_EQ(s.last_input, "#!/bin/sh\nexec true\n");

    FakeSlurm refused;
    refused.answer("sbatch", "", 1,
                   "sbatch: warning: x\nsbatch: error: Batch job submission failed: Requested node configuration is "
                   "not available\n");
    id = refused.client().submit("#!/bin/sh\n");
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.error().message,
              "sbatch refused the job: sbatch: error: Batch job submission failed: Requested node configuration is "
              "not available");

    FakeSlurm cancel;
    cancel.answer("scancel", "", 0, "scancel: error: Kill job error on job id 9: Invalid job id specified\n");
    Status done = cancel.client().act(SlurmAction::cancel, 9);
    ASSERT_FALSE(done.ok()) << "scancel exits 0 for a job it does not know";
    EXPECT_EQ(done.error().message,
              "scancel slurm:9: scancel: error: Kill job error on job id 9: Invalid job id specified");
    EXPECT_EQ(cancel.calls, std::vector<std::string>{"scancel -v 9"});

    FakeSlurm hold;
    hold.answer("scontrol", "");
    EXPECT_TRUE(hold.client().act(SlurmAction::hold, 9).ok());
    EXPECT_TRUE(hold.client().act(SlurmAction::requeue, 9).ok());
    EXPECT_EQ(hold.calls, (std::vector<std::string>{"scontrol hold 9", "scontrol requeue 9"}));
}

TEST(SlurmClient, QueueRowsOpenEndedAndForgotten) {
    const std::vector<RememberedJob> known = {{41, 1000, "/home/a", "train"},
                                              {43, 2000, "/h", "done"},
                                              {45, 3000, "/x", "forgotten"},
                                              {41, 4000, "/home/a", "train"}};
    FakeSlurm s;
    s.answer("squeue", std::string(kRunning) + kCompleted);
    s.answer("sacct", "");
    SlurmRows open = slurm_queue_rows(s.client(), known, false);
    ASSERT_FALSE(open.problem);
    ASSERT_EQ(open.rows.size(), 1u);
    EXPECT_EQ(open.rows[0]["id"], "slurm:41");
    EXPECT_EQ(open.rows[0]["gpus_count"], 2);
    EXPECT_NE(s.calls[0].find("-j 41,43,45"), std::string::npos) << "each job asked for once" << s.calls[0];

    SlurmRows all = slurm_queue_rows(s.client(), known, true);
    ASSERT_EQ(all.rows.size(), 3u);
    EXPECT_EQ(all.rows[1]["state"], "completed");
    EXPECT_EQ(all.rows[2]["state"], "ended");
    EXPECT_EQ(all.rows[2]["name"], "forgotten") << "what Slurm no longer knows comes from the remembered submission";
    EXPECT_EQ(all.rows[2]["submit_ms"], 3000);
    EXPECT_TRUE(all.rows[2].contains("note"));

    FakeSlurm none;
    SlurmRows missing = slurm_queue_rows(none.client(), known, true);
    EXPECT_TRUE(missing.problem);
    EXPECT_TRUE(missing.rows.empty()) << "rows Slurm could not be asked about are missing, not 'ended'";
    EXPECT_TRUE(slurm_queue_rows(none.client(), {}, true).rows.empty());
    EXPECT_TRUE(none.calls.size() == 1u) << "no remembered job: Slurm is not asked";
}

TEST(SlurmClient, WaitAndLogsFollowTheJobToItsEnd) {
    test::TempDir d;
    const std::string out = d.path() + "/baton-41.out";
    FakeSlurm s;
    s.answer("squeue", kRunning);
    s.answer("squeue", std::string(kRunning).replace(3, 7, "COMPLETED"));
    s.answer("scontrol", "ExitCode=0:0\n");
    d.write("baton-41.out", "epoch 1\n");
    std::string seen;
    Status copied = copy_slurm_output(
        s.client(), 41, out, true,
        [&](std::string_view b) {
            seen += b;
            return true;
        },
        0.001);
    ASSERT_TRUE(copied.ok()) << copied.error().message;
    EXPECT_EQ(seen, "epoch 1\n");

    Status gone = copy_slurm_output(s.client(), 41, d.path() + "/absent", false, [](std::string_view) { return true; });
    EXPECT_TRUE(gone.is(ErrorCode::not_found));
    Status closed = copy_slurm_output(s.client(), 41, out, false, [](std::string_view) { return false; });
    EXPECT_TRUE(closed.is(ErrorCode::disconnected));

    FakeSlurm w;
    w.answer("squeue", kRunning);
    w.answer("squeue", "41|FAILED|alice|2026-12-01T10:00:00|2026-12-01T10:00:05|2026-12-01T10:01:00|N/A|1|None|/h|t\n");
    w.answer("scontrol", "ExitCode=7:0\n");
    Result<SlurmJob> ended = wait_for_slurm_job(w.client(), 41, 0.001);
    ASSERT_TRUE(ended.ok()) << ended.error().message;
    EXPECT_EQ(ended->state, "failed");
    EXPECT_EQ(slurm_wait_status(*ended), 7);
    SlurmJob done;
    done.state = "completed";
    EXPECT_EQ(slurm_wait_status(done), 0);
    done.state = "cancelled";
    EXPECT_EQ(slurm_wait_status(done), 1) << "no exit code: a failure all the same";
}
