// The Slurm hand-off's pieces on their own: the sbatch script, what sbatch, squeue and sacct print,
// the file of remembered jobs, and the runner of Slurm's commands (input, output, a deadline, a
// missing program). tests/cli/slurm_integration_test.cpp runs them against a real slurmctld.
#include <gtest/gtest.h>

#include <fstream>

#include "queue/slurm.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

SlurmSubmit submit() {
    SlurmSubmit s;
    s.argv = {"python3", "train.py", "--lr", "it's 0.1"};
    s.name = "train";
    s.cwd = "/home/alice/run";
    s.baton = "/usr/bin/baton";
    return s;
}

}  // namespace

TEST(SlurmScript, EveryFlagBecomesItsDirectiveAndTheCommandRunsUnderBatonRun) {
    SlurmSubmit s = submit();
    s.nodes = 2;
    s.gpus_per_node = 4;
    s.cpus = 8;
    s.memory_bytes = 64ull << 30;
    s.after = {12, 13};
    s.after_ok = true;
    s.requeue = true;
    s.hold = true;
    EXPECT_EQ(sbatch_script(s),
              "#!/bin/sh\n"
              "# Written by baton submit --slurm (docs/queue.md, \"Handing jobs to Slurm\").\n"
              "#SBATCH --job-name=train\n"
              "#SBATCH --chdir=/home/alice/run\n"
              "#SBATCH --output=baton-%j.out\n"
              "#SBATCH --error=baton-%j.err\n"
              "#SBATCH --nodes=2\n"
              "#SBATCH --ntasks-per-node=1\n"
              "#SBATCH --gpus-per-node=4\n"
              "#SBATCH --cpus-per-gpu=8\n"
              "#SBATCH --mem=65536M\n"
              "#SBATCH --dependency=afterok:12:13\n"
              "#SBATCH --requeue\n"
              "#SBATCH --hold\n"
              "exec '/usr/bin/baton' run --name 'train' -- 'python3' 'train.py' '--lr' 'it'\\''s 0.1'\n");
}

TEST(SlurmScript, WithoutGpusCpusArePerTaskAndNothingUnaskedIsWritten) {
    SlurmSubmit s = submit();
    s.cpus = 3;
    s.after = {7};
    s.memory_bytes = (1ull << 20) + 1;  // rounded up to whole MiB
    const std::string script = sbatch_script(s);
    EXPECT_NE(script.find("#SBATCH --cpus-per-task=3\n"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --dependency=afterany:7\n"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --mem=2M\n"), std::string::npos) << script;
    for (const char* absent : {"--gpus", "--nodes", "--requeue", "--hold", "--cpus-per-gpu"})
        EXPECT_EQ(script.find(absent), std::string::npos) << absent << "\n" << script;
}

TEST(SlurmScript, NamesAndDirectoriesSbatchCouldMisread) {
    SlurmSubmit s = submit();
    s.name = "my \"big\" run\n#SBATCH --nodes=99";
    s.cwd = "/data/two words";
    const std::string script = sbatch_script(s);
    // One line per directive: no name can add one of its own.
    EXPECT_NE(script.find("#SBATCH --job-name=\"my _big_ run_#SBATCH --nodes=99\"\n"), std::string::npos) << script;
    EXPECT_EQ(script.find("\n#SBATCH --nodes=99"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --chdir=\"/data/two words\"\n"), std::string::npos) << script;
    EXPECT_TRUE(check_sbatch(s).ok());
    s.cwd = "/data/a\"b";
    const baton::Status refused = check_sbatch(s);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(refused.is(baton::ErrorCode::invalid_argument));
    EXPECT_NE(refused.error().message.find("give --cwd another"), std::string::npos);
}

TEST(SlurmAnswers, SbatchParsable) {
    EXPECT_EQ(*parse_sbatch_id("123\n"), 123);
    EXPECT_EQ(*parse_sbatch_id("4567;cluster-a\n"), 4567);
    for (const char* bad : {"", "\n", "Submitted batch job 12\n", "-3\n", "12x\n", "99999999999999999999999\n"})
        EXPECT_FALSE(parse_sbatch_id(bad).ok()) << bad;
}

TEST(SlurmAnswers, SqueueLines) {
    const std::string text =
        "41|RUNNING|alice|2026-12-01T10:00:00|2026-12-01T10:00:05|2026-12-02T10:00:05|gres:gpu:2|16|None|/home/"
        "a|train\n"
        "42|PENDING|alice|2026-12-01T10:01:00|2026-12-01T11:00:00|2026-12-02T11:00:00|gres/gpu:a100:4|32|Resources|/h|"
        "a|name|with|bars\n"
        "43|COMPLETED|alice|2026-12-01T09:00:00|2026-12-01T09:00:01|2026-12-01T09:30:00|N/A|1|None|/h|done\n"
        "garbage line\n"
        "x|RUNNING|a|b|c|d|e|f|g|h|i\n"
        "0|CANCELLED by 1|a|b|c|d|e|f|g|h|i\n";  // (no job has id 0: found by fuzz_slurm_answers)
    const std::vector<SlurmJob> jobs = parse_squeue(text);
    ASSERT_EQ(jobs.size(), 3u);
    EXPECT_EQ(jobs[0].id, 41);
    EXPECT_EQ(jobs[0].state, "running");
    EXPECT_EQ(jobs[0].gpus, 2u);
    EXPECT_EQ(jobs[0].cpus, 16u);
    EXPECT_EQ(jobs[0].reason, "");
    ASSERT_TRUE(jobs[0].start_ms.has_value());
    EXPECT_EQ(*jobs[0].start_ms - *jobs[0].submit_ms, 5000);
    EXPECT_FALSE(jobs[0].end_ms.has_value());  // (squeue's end of a running job is its time limit)
    EXPECT_EQ(jobs[1].state, "pending");
    EXPECT_EQ(jobs[1].gpus, 4u);
    EXPECT_EQ(jobs[1].reason, "Resources");
    EXPECT_EQ(jobs[1].name, "a|name|with|bars");
    EXPECT_FALSE(jobs[1].start_ms.has_value());  // (an expected start, not a start)
    EXPECT_EQ(jobs[2].state, "completed");
    EXPECT_EQ(jobs[2].gpus, 0u);
    EXPECT_EQ(*jobs[2].end_ms - *jobs[2].start_ms, 1799000);
    EXPECT_EQ(jobs[2].cwd, "/h");
}

TEST(SlurmAnswers, SacctLinesTimesAndStates) {
    const std::string text =
        "50|CANCELLED by 1000|alice|2026-12-01T10:00:00|2026-12-01T10:00:01|2026-12-01T10:05:00|4|0:15|/h|x\n"
        "50.batch|CANCELLED|||||4|0:15|/h|batch\n"
        "51|FAILED|alice|2026-12-01T10:00:00|Unknown|Unknown|2|3:0|/h|y\n"
        "0|CANCELLED by 1|alice|||||0:15|/h|zero\n";
    const std::vector<SlurmJob> jobs = parse_sacct(text);
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_EQ(jobs[0].state, "cancelled");
    EXPECT_EQ(jobs[0].exit_code, std::optional<int>(128 + 15));
    EXPECT_EQ(jobs[1].state, "failed");
    EXPECT_EQ(jobs[1].exit_code, std::optional<int>(3));
    EXPECT_FALSE(jobs[1].start_ms.has_value());
    for (const char* none : {"Unknown", "N/A", "None", "", "2026-13-45T99:00:00x"})
        EXPECT_FALSE(parse_slurm_time(none).has_value()) << none;
    EXPECT_TRUE(slurm_state_open("pending"));
    EXPECT_TRUE(slurm_state_open("completing"));
    EXPECT_FALSE(slurm_state_open("completed"));
    EXPECT_FALSE(slurm_state_open("timeout"));
}

TEST(SlurmRemembered, LinesRoundTripAndBadOnesAreSkipped) {
    test::TempDir d;
    const std::string path = d.path() + "/state/baton/slurm-jobs";
    ASSERT_TRUE(remember_slurm_job(path, {7, 1000, "/data/two words", "tab\tand\nnewline"}).ok());
    std::ofstream(path, std::ios::app) << "not a line\n12\tx\t/\tn\n";
    ASSERT_TRUE(remember_slurm_job(path, {8, 2000, "/", "b"}).ok());
    const std::vector<RememberedJob> jobs = remembered_slurm_jobs(path);
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_EQ(jobs[0].id, 7);
    EXPECT_EQ(jobs[0].cwd, "/data/two words");
    EXPECT_EQ(jobs[0].name, "tab\tand newline");  // (the last field keeps its tab; no newline splits it)
    EXPECT_EQ(jobs[1].id, 8);
    EXPECT_TRUE(remembered_slurm_jobs(d.path() + "/missing").empty());
    EXPECT_EQ(slurm_job_id("slurm:42"), std::optional<std::int64_t>(42));
    for (const char* bad : {"42", "slurm:", "slurm:0", "slurm:-1", "slurm:4x", "SLURM:4"})
        EXPECT_FALSE(slurm_job_id(bad).has_value()) << bad;
}

TEST(SlurmCommands, InputOutputStatusDeadlineAndMissingProgram) {
    Result<ProgramOutput> cat = run_program({"/bin/sh", "-c", "cat; echo to-err >&2; exit 3"}, "script\n", 10);
    ASSERT_TRUE(cat.ok());
    EXPECT_EQ(cat->out, "script\n");
    EXPECT_EQ(cat->err, "to-err\n");
    EXPECT_EQ(cat->exit_status, 3);
    EXPECT_FALSE(cat->timed_out);
    // A program that reads none of a long input: no SIGPIPE for this process.
    Result<ProgramOutput> deaf = run_program({"/bin/true"}, std::string(4 << 20, 'x'), 10);
    ASSERT_TRUE(deaf.ok());
    EXPECT_EQ(deaf->exit_status, 0);
    Result<ProgramOutput> slow = run_program({"/bin/sleep", "30"}, "", 0.3);
    ASSERT_TRUE(slow.ok());
    EXPECT_TRUE(slow->timed_out);
    EXPECT_EQ(slow->exit_status, 128 + 9);
    Result<ProgramOutput> missing = run_program({"no-such-slurm-command"}, "", 10);
    ASSERT_TRUE(missing.ok());
    EXPECT_EQ(missing->exit_status, 127);
    EXPECT_EQ(missing->err.rfind("cannot run no-such-slurm-command: ", 0), 0u) << missing->err;
}
