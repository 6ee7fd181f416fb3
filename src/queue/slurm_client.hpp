// Asking Slurm about the jobs `baton submit --slurm` handed it, through its client commands
// (squeue, sacct, scontrol, sbatch, scancel: Debian's slurm-client), and what `baton queue`, show,
// logs and wait make of the answers. The commands run through a SlurmRunner, so every rule here is
// tested on recorded answers (tests/queue/slurm_client_test.cpp) as well as against a real Slurm
// (tests/cli/slurm). The parsers of what they print live in queue/slurm.hpp and here; both are in
// the fuzz target fuzz_slurm_answers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "queue/slurm.hpp"

namespace baton::queue {

// Runs one client command with `input` on its stdin.
using SlurmRunner =
    std::function<Result<ProgramOutput>(const std::vector<std::string>& argv, const std::string& input)>;

// run_program with a 30 s deadline (a controller that does not answer: sbatch's own retries take
// about this long).
SlurmRunner system_slurm_runner();

// What Slurm said of some jobs: those it knows, and why it could not be asked, when it could not.
struct SlurmLookup {
    std::map<std::int64_t, SlurmJob> jobs;
    std::optional<Error> problem;
};

enum class SlurmAction { cancel, hold, release, requeue };

class SlurmClient {
  public:
    explicit SlurmClient(SlurmRunner run) : run_(std::move(run)) {}

    // One client command. Errors: not_found when it is not installed (the message names Debian's
    // package), timed_out, failed; a command that ran and exited non-zero is an answer, not an error.
    Result<ProgramOutput> command(const std::vector<std::string>& argv, const std::string& input = "") const;

    // squeue while slurmctld still holds the jobs, then sacct (when the cluster keeps accounting)
    // for the others. A job neither knows is absent; `problem` says why Slurm could not be asked.
    SlurmLookup lookup(const std::vector<std::int64_t>& ids) const;

    // The job's state and exit status as Slurm knows them now; for an ended job squeue has no exit
    // code, so scontrol's "ExitCode=" is read while slurmctld holds it. not_found when Slurm no
    // longer knows the job.
    Result<SlurmJob> job(std::int64_t id) const;

    // `sbatch --parsable` with `script` on stdin: the new job's id; sbatch's refusal in one line.
    Result<std::int64_t> submit(const std::string& script) const;

    // scancel or scontrol on one job; what it said went wrong, in one line ("scancel slurm:7: ...").
    Status act(SlurmAction action, std::int64_t id) const;

    // What `scontrol show job ID` prints (parse_scontrol_fields reads it); not_found when
    // slurmctld no longer holds the job (sacct, through job(), may still know it).
    Result<std::string> show(std::int64_t id) const;

  private:
    SlurmRunner run_;
};

// `scontrol show job` text as key=value pairs (a value holds spaces only when it ends its line,
// as Command= or Reason=); words before the first key are ignored.
std::map<std::string, std::string> parse_scontrol_fields(const std::string& text);
// The line of a command's output that says what went wrong: the first that names an error, else
// the first; printable.
std::string slurm_error_line(const std::string& text);

// `baton wait`'s exit status for an ended job: 0 completed, its exit code (& 255), else 1.
int slurm_wait_status(const SlurmJob& j);

// One row of `baton queue` ("id": "slurm:ID", owner, state, name, cwd, counts, times, exit
// status); what Slurm left empty comes from the remembered submission `r` when given.
nlohmann::json slurm_job_row(const SlurmJob& j, const RememberedJob* r);
// The latest remembered submission of job `id`, null when this user never handed it over.
const RememberedJob* find_remembered(const std::vector<RememberedJob>& all, std::int64_t id);

// The rows `baton queue` lists for the remembered jobs (the newest 1000): open ones, and with
// `all` the ended ones too, a job Slurm no longer knows as "ended" with a note.
struct SlurmRows {
    nlohmann::json rows = nlohmann::json::array();
    std::optional<Error> problem;  // Slurm could not be asked: the rows are missing, not empty
};
SlurmRows slurm_queue_rows(const SlurmClient& slurm, const std::vector<RememberedJob>& known, bool all);

// The job's output file as Slurm writes it (`path`), passed to `write` from `offset` on; with
// `follow`, until the job ends (the state first, then the file, so what it wrote before its end
// is all read). Errors: the job is unknown to Slurm, or its file is not there once it ended
// (not_found); disconnected when `write` returns false (the reader went away).
Status copy_slurm_output(const SlurmClient& slurm, std::int64_t id, const std::string& path, bool follow,
                         const std::function<bool(std::string_view)>& write, double poll_seconds = 0.5);

// Polls the job until it ends; the ended job, or why Slurm cannot say.
Result<SlurmJob> wait_for_slurm_job(const SlurmClient& slurm, std::int64_t id, double poll_seconds = 1);

}  // namespace baton::queue
