// The hand-off to Slurm (docs/queue.md, "Handing jobs to Slurm"): `baton submit --slurm` renders an
// sbatch script that runs the command under `baton run` (so findings, summary and report exist on
// the cluster too), submits it with `sbatch --parsable`, and remembers the Slurm job id for this
// user; `baton queue`, `show`, `logs` and `cancel` then speak to Slurm (squeue, sacct, scontrol,
// scancel) about the jobs named `slurm:ID`. No agent is involved: Slurm is the scheduler.
//
// Why a file of remembered ids rather than asking squeue for every job of the user: `baton queue`
// must stay instant on a machine that has Slurm's client installed but no reachable controller,
// and it lists only the jobs baton handed over.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/run_program.hpp"
#include "core/result.hpp"

namespace baton::queue {

// What `baton submit --slurm` asks for, already checked.
struct SlurmSubmit {
    std::vector<std::string> argv;    // the command
    std::string name;                 // --job-name, and baton run's --name
    std::string cwd;                  // --chdir (also where the output files go)
    unsigned nodes = 0;               // --nodes (0: not given)
    unsigned gpus_per_node = 0;       // --gpus-per-node
    std::optional<unsigned> cpus;     // --cpus-per-gpu with GPUs, else --cpus-per-task
    std::uint64_t memory_bytes = 0;   // --mem (per node)
    std::vector<std::int64_t> after;  // Slurm job ids: --dependency
    bool after_ok = false;            // afterok (else afterany)
    bool requeue = false;             // --requeue (from --retries > 0)
    bool hold = false;                // --hold
    std::string baton;                // baton's path on the nodes
};

// The sbatch script: #SBATCH lines, then `exec BATON run --name NAME -- CMD...`, every word
// quoted for /bin/sh. Output goes to CWD/baton-JOBID.out and .err.
std::string sbatch_script(const SlurmSubmit& s);
// An invalid_argument error when `s` cannot be written as an sbatch script (a directory whose
// name an #SBATCH line cannot carry).
Status check_sbatch(const SlurmSubmit& s);

// `sbatch --parsable` prints "ID" or "ID;CLUSTER": the id.
Result<std::int64_t> parse_sbatch_id(const std::string& output);

// One Slurm job as baton lists it.
struct SlurmJob {
    std::int64_t id = 0;
    std::string name, user;
    std::string state;   // Slurm's, lower case: pending, running, completed, failed, cancelled, timeout, ...
    std::string reason;  // why it pends (squeue's %r), "" when None
    std::optional<std::int64_t> submit_ms, start_ms, end_ms;
    unsigned gpus = 0, cpus = 0;
    std::optional<int> exit_code;  // sacct's, when known
    std::string cwd;
};

// `squeue -h -t all -o FORMAT` lines (kSqueueFormat) and `sacct -n -P -X -o FIELDS` lines
// (kSacctFields); lines that do not parse are skipped.
extern const char* const kSqueueFormat;
extern const char* const kSacctFields;
std::vector<SlurmJob> parse_squeue(const std::string& text);
std::vector<SlurmJob> parse_sacct(const std::string& text);
// Slurm's "ExitCode" (sacct's field, scontrol's ExitCode=) "CODE:SIGNAL" as the shell's exit
// status: CODE, or 128 + SIGNAL when a signal ended it; "CODE" alone is CODE; none for anything
// that is not two small numbers.
std::optional<int> parse_slurm_exit_code(std::string_view code);
// Slurm's timestamps ("2026-12-01T03:59:58", local time; "Unknown", "N/A", "None" are none).
std::optional<std::int64_t> parse_slurm_time(const std::string& text);
// Pending, running, configuring, completing, suspended, requeued...: not ended.
bool slurm_state_open(const std::string& state);

// The jobs this user handed to Slurm, one line each in the file: "ID<TAB>SUBMIT_MS<TAB>CWD<TAB>NAME".
struct RememberedJob {
    std::int64_t id = 0;
    std::int64_t submit_ms = 0;
    std::string cwd, name;
};
Status remember_slurm_job(const std::string& path, const RememberedJob& job);
std::vector<RememberedJob> remembered_slurm_jobs(const std::string& path);

// run_program() and ProgramOutput: core/run_program.hpp.

// "slurm:123" -> 123; none for anything else.
std::optional<std::int64_t> slurm_job_id(const std::string& word);

}  // namespace baton::queue
