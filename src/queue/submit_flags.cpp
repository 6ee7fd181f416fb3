#include "queue/submit_flags.hpp"

#include "queue/job_array.hpp"
#include "queue/job_request.hpp"
#include "queue/pool.hpp"
#include "run/run_command.hpp"

namespace baton::queue {

namespace {

Error invalid(std::string message) {
    return make_error(ErrorCode::invalid_argument, std::move(message));
}

// What only this machine's queue can do, refused with what to give instead.
Status slurm_can_take(const SubmitFlags& a) {
    if (!a.gpu.empty())
        return invalid("--slurm with --gpu: Slurm chooses the nodes' GPUs; ask for a count with --gpus N");
    if (!a.gpu_mem.empty())
        return invalid("--slurm with --gpu-mem: Slurm does not schedule GPU memory; --gpus N asks for whole GPUs");
    if (a.share) return invalid("--slurm with --share: Slurm gives each job whole GPUs");
    if (a.priority != 0) return invalid("--slurm with --priority: Slurm orders its own queue (its fair share)");
    if (!a.at.empty() || !a.delay.empty())
        return invalid(
            "--slurm with --at or --delay: give sbatch's own --begin in the script (baton submit --slurm "
            "--dry-run prints it to edit)");
    if (!a.array.empty() || !a.array_file.empty() || a.max_parallel)
        return invalid(
            "--slurm with --array, --array-file or --max-parallel: give sbatch's own --array in the script (baton "
            "submit --slurm --dry-run prints it to edit)");
    if (!a.group.empty()) return invalid("--slurm with --group: the groups are this machine's queue's");
    if (!a.on_end.empty())
        return invalid(
            "--slurm with --on-end: give sbatch's --mail-type or an epilog (baton submit --slurm --dry-run "
            "prints the script to edit)");
    if (a.on_oom == "retry")
        return invalid(
            "--slurm with --on-oom retry: the retry is this machine's agent's; --retries N makes the job requeueable "
            "(sbatch --requeue)");
    return Ok{};
}

// --array or --array-file, and --max-parallel, into the submission.
Status array_of(const SubmitFlags& a, const std::vector<std::string>& argv, Submission& s) {
    if (!a.array.empty() && !a.array_file.empty())
        return invalid("--array and --array-file: give one (indices, or a file of one job per line)");
    unsigned from_spec = 0;
    if (!a.array.empty()) {
        Result<JobArray> arr = parse_array_spec(a.array, from_spec);
        if (!arr.ok()) return arr.error();
        s.array = std::move(*arr);
    } else if (!a.array_file.empty()) {
        Result<JobArray> arr = parse_array_file(a.array_file_text, a.array_file, has_placeholder(argv));
        if (!arr.ok()) return arr.error();
        s.array = std::move(*arr);
    }
    if (a.max_parallel && s.array.empty())
        return invalid("--max-parallel goes with --array or --array-file (a group's limit: --group)");
    if (from_spec && a.max_parallel && from_spec != a.max_parallel)
        return invalid("--array " + a.array + " and --max-parallel " + std::to_string(a.max_parallel) +
                       ": two limits (give one)");
    s.request.max_parallel = a.max_parallel ? a.max_parallel : from_spec;
    return Ok{};
}

}  // namespace

Result<Submission> local_submission(const SubmitFlags& a, const std::vector<std::string>& argv, const std::string& cwd,
                                    const std::map<std::string, std::string>& env, std::int64_t now_ms) {
    if (a.dry_run || a.nodes) {
        const std::string flag = a.dry_run ? "--dry-run" : "--nodes";
        return invalid(flag + " goes with --slurm (this machine's queue runs jobs on this machine only)");
    }
    Submission s;
    s.argv = argv;
    s.name = a.name;
    s.priority = a.priority;
    s.hold = a.hold;
    s.cwd = cwd;
    for (const auto& kv : env) s.env.push_back(kv);
    JobRequest& q = s.request;
    q.want.gpus = a.gpus;
    s.gpu_list = a.gpu;
    if (!a.gpu.empty() && a.gpus) return invalid("--gpus and --gpu: give one (a count, or the GPUs themselves)");
    if (!a.gpu_mem.empty()) {
        s.gpu_memory_text = a.gpu_mem;
        if (a.gpu_mem == "auto") {
            if (a.name.empty())
                return invalid("--gpu-mem auto reads the peak of earlier runs with the same --name: give --name");
            q.gpu_memory_auto = true;
        } else {
            std::optional<std::uint64_t> b = parse_size(a.gpu_mem);
            if (!b) return invalid("--gpu-mem " + a.gpu_mem + ": a size like 20G, 512M or 1.5T, or auto");
            q.want.gpu_memory_bytes = *b;
        }
    }
    if (!a.mem.empty()) {
        std::optional<std::uint64_t> b = parse_size(a.mem);
        if (!b) return invalid("--mem " + a.mem + ": a size like 64G or 512M");
        q.want.memory_bytes = *b;
    }
    s.default_cpus = a.cpus < 0;
    q.want.cpus = a.cpus < 0 ? 0 : static_cast<unsigned>(a.cpus);
    q.want.share = a.share;
    q.retries = a.retries;
    q.on_oom = a.on_oom == "retry" ? OnOom::retry : OnOom::fail;
    if (!a.at.empty() && !a.delay.empty()) return invalid("--at and --delay: give one (a time, or a wait from now)");
    if (!a.at.empty() || !a.delay.empty()) {
        Result<std::int64_t> when = a.at.empty() ? parse_delay(a.delay, now_ms) : parse_at(a.at, now_ms);
        if (!when.ok()) return when.error();
        q.not_before_ms = *when;
    }
    if (!a.after.empty()) {
        Result<After> after = parse_after(a.after);
        if (!after.ok()) return invalid("--after " + a.after + ": " + after.error().message);
        s.after = after->jobs;
        s.after_ok = after->ok;
    }
    if (!a.group.empty()) {
        if (Status ok = check_group_name(a.group); !ok.ok()) return invalid("--group: " + ok.error().message);
        q.group = a.group;
    }
    if (Status arr = array_of(a, argv, s); !arr.ok()) return arr.error();
    if (!a.on_end.empty()) {
        if (a.on_end.find('\0') != std::string::npos || a.on_end.size() > 4096)
            return invalid("--on-end: a shell command of at most 4096 bytes");
        q.on_end = a.on_end;
    }
    // What no machine could run is refused before an agent is asked.
    Pool unknown;
    unknown.gpus_known = false;
    unknown.machine_known = false;
    JobRequest checked = q;
    if (!a.gpu.empty()) checked.want.gpu_uuids = {a.gpu};  // (the agent resolves them; here: GPUs are asked)
    if (Status fits = check_request(checked, unknown); !fits.ok()) return invalid(fits.error().message);
    return s;
}

Result<SlurmSubmit> slurm_submission(const SubmitFlags& a, const std::vector<std::string>& argv, const std::string& cwd,
                                     const std::string& baton) {
    if (Status can = slurm_can_take(a); !can.ok()) return can.error();
    SlurmSubmit s;
    s.argv = argv;
    s.name = a.name.empty() ? run::command_name(argv) : a.name;
    s.cwd = cwd;
    s.nodes = a.nodes;
    s.gpus_per_node = a.gpus;
    if (a.cpus >= 0) s.cpus = static_cast<unsigned>(a.cpus);
    if (!a.mem.empty()) {
        std::optional<std::uint64_t> b = parse_size(a.mem);
        if (!b) return invalid("--mem " + a.mem + ": a size like 64G or 512M");
        s.memory_bytes = *b;
    }
    if (!a.after.empty()) {
        Result<After> after = parse_after(a.after);
        if (!after.ok()) return invalid("--after " + a.after + ": " + after.error().message + " (Slurm job ids)");
        s.after = after->jobs;
        s.after_ok = after->ok;
    }
    s.requeue = a.retries > 0;
    s.hold = a.hold;
    s.baton = baton;
    if (Status can = check_sbatch(s); !can.ok()) return can.error().context("--slurm");
    return s;
}

}  // namespace baton::queue
