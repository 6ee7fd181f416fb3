#include "cli/cmd_slurm.hpp"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <fcntl.h>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "cli/cli_common.hpp"
#include "core/clock.hpp"
#include "core/config.hpp"
#include "core/printable.hpp"
#include "queue/job_request.hpp"
#include "queue/slurm.hpp"
#include "run/run_command.hpp"
#include "store/history.hpp"

namespace baton::cli {

namespace {

using nlohmann::json;

constexpr double kSlurmTimeout = 30;      // a controller that does not answer: sbatch's own retries take about this
constexpr std::size_t kMaxListed = 1000;  // the newest remembered jobs `baton queue` asks Slurm about

// Where the history lives: the remembered Slurm jobs go beside it.
std::string jobs_file(const std::string& config_path) {
    std::string db = History::default_path();
    if (Result<Config> c = load_config(config_path); c.ok() && !c->history_db.empty()) db = c->history_db;
    return db.substr(0, db.rfind('/') + 1) + "slurm-jobs";
}

std::string first_line(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    return printable(line.empty() ? text : line);
}

// The line of a command's output that says what went wrong: the first naming an error, else the first.
std::string error_line(const std::string& text) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.find("error") != std::string::npos) return printable(line);
    return first_line(text);
}

// A Slurm client command; an error says which and why in one line.
Result<queue::ProgramOutput> slurm(const std::vector<std::string>& argv, const std::string& input = "") {
    Result<queue::ProgramOutput> r = queue::run_program(argv, input, kSlurmTimeout);
    if (!r.ok()) return r.error();
    if (r->timed_out) return make_error(fmt::format("{} did not answer within {:.0f} s", argv[0], kSlurmTimeout));
    if (r->exit_status == 127 && r->err.rfind("cannot run ", 0) == 0)
        return make_error(first_line(r->err) + " (Slurm's client commands, Debian's slurm-client)");
    return r;
}

std::string ids_text(const std::vector<std::int64_t>& ids) {
    std::string out;
    for (std::int64_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
    return out;
}

// What Slurm says of these jobs: squeue while slurmctld still holds them, then sacct (when the
// cluster keeps accounting) for the others. `problem`: the first failure, in one line.
std::map<std::int64_t, queue::SlurmJob> lookup(const std::vector<std::int64_t>& ids, std::string& problem) {
    std::map<std::int64_t, queue::SlurmJob> found;
    if (ids.empty()) return found;
    Result<queue::ProgramOutput> q =
        slurm({"squeue", "-h", "-t", "all", "-j", ids_text(ids), "-o", queue::kSqueueFormat});
    if (!q.ok()) {
        problem = q.error().message;
        return found;
    }
    // (every id unknown to slurmctld: "Invalid job id specified" and status 1; not a failure)
    if (q->exit_status != 0 && q->err.find("Invalid job id") == std::string::npos) {
        problem = "squeue: " + first_line(q->err);
        return found;
    }
    for (queue::SlurmJob& j : queue::parse_squeue(q->out)) found[j.id] = std::move(j);
    std::vector<std::int64_t> rest;
    for (std::int64_t id : ids)
        if (!found.count(id)) rest.push_back(id);
    if (rest.empty()) return found;
    Result<queue::ProgramOutput> a =
        slurm({"sacct", "-n", "-P", "-X", "-j", ids_text(rest), "-o", queue::kSacctFields});
    if (a.ok() && a->exit_status == 0)
        for (queue::SlurmJob& j : queue::parse_sacct(a->out)) found[j.id] = std::move(j);
    return found;
}

json row(const queue::SlurmJob& j, const queue::RememberedJob* r) {
    json o;
    o["id"] = "slurm:" + std::to_string(j.id);
    o["slurm_id"] = j.id;
    o["owner"] = j.user;
    o["state"] = j.state;
    o["name"] = j.name.empty() && r ? r->name : j.name;
    o["cwd"] = j.cwd.empty() && r ? r->cwd : j.cwd;
    o["gpus_count"] = j.gpus;
    o["cpus_count"] = j.cpus;
    if (!j.reason.empty()) o["waiting"] = j.reason;
    if (j.submit_ms)
        o["submit_ms"] = *j.submit_ms;
    else if (r)
        o["submit_ms"] = r->submit_ms;
    if (j.start_ms) o["start_ms"] = *j.start_ms;
    if (j.end_ms) o["end_ms"] = *j.end_ms;
    if (j.exit_code) o["exit_status"] = *j.exit_code;
    return o;
}

const queue::RememberedJob* remembered(const std::vector<queue::RememberedJob>& all, std::int64_t id) {
    for (auto it = all.rbegin(); it != all.rend(); ++it)
        if (it->id == id) return &*it;
    return nullptr;
}

// `scontrol show job ID` as key=value pairs (values may hold spaces only in the last pair of a line).
std::map<std::string, std::string> scontrol_fields(const std::string& text) {
    std::map<std::string, std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string last;
        for (std::string w; words >> w;) {
            const std::size_t eq = w.find('=');
            if (eq == std::string::npos || eq == 0) {
                if (!last.empty()) out[last] += " " + w;
                continue;
            }
            last = w.substr(0, eq);
            out[last] = w.substr(eq + 1);
        }
    }
    return out;
}

// The job's state and exit status as Slurm knows them now.
Result<queue::SlurmJob> one(std::int64_t id) {
    std::string problem;
    std::map<std::int64_t, queue::SlurmJob> found = lookup({id}, problem);
    auto it = found.find(id);
    if (it == found.end())
        return make_error(problem.empty() ? "Slurm does not know job " + std::to_string(id) +
                                                " any more (and keeps no accounting that sacct could read)"
                                          : problem);
    queue::SlurmJob j = it->second;
    if (!j.exit_code && !queue::slurm_state_open(j.state)) {
        // squeue has no exit code: scontrol has it while slurmctld holds the job ("ExitCode=1:0").
        Result<queue::ProgramOutput> s = slurm({"scontrol", "show", "job", std::to_string(id)});
        if (s.ok() && s->exit_status == 0) {
            const std::string code = scontrol_fields(s->out)["ExitCode"];
            const std::size_t colon = code.find(':');
            if (colon != std::string::npos) {
                const int c = std::atoi(code.substr(0, colon).c_str()), sig = std::atoi(code.c_str() + colon + 1);
                j.exit_code = sig ? 128 + sig : c;
            }
        }
    }
    return j;
}

int print(const json& j) {
    return write_stdout(j.dump(2, ' ', false, json::error_handler_t::replace) + "\n") ? kExitOk : kExitFailure;
}

}  // namespace

int run_submit_slurm(const QueueArgs& a, const std::vector<std::string>& argv, const std::string& cwd,
                     const std::string& config_path) {
    // What only this machine's queue can do is refused with what to give instead.
    if (!a.gpu.empty())
        return usage_error("--slurm with --gpu: Slurm chooses the nodes' GPUs; ask for a count with --gpus N");
    if (!a.gpu_mem.empty())
        return usage_error("--slurm with --gpu-mem: Slurm does not schedule GPU memory; --gpus N asks for whole GPUs");
    if (a.share) return usage_error("--slurm with --share: Slurm gives each job whole GPUs");
    if (a.priority != 0) return usage_error("--slurm with --priority: Slurm orders its own queue (its fair share)");
    if (a.on_oom == "retry")
        return usage_error(
            "--slurm with --on-oom retry: the retry is this machine's agent's; --retries N makes "
            "the job requeueable (sbatch --requeue)");
    queue::SlurmSubmit s;
    s.argv = argv;
    s.name = a.name.empty() ? command_name(argv) : a.name;
    s.cwd = cwd;
    s.nodes = a.nodes;
    s.gpus_per_node = a.gpus;
    if (a.cpus >= 0) s.cpus = static_cast<unsigned>(a.cpus);
    if (!a.mem.empty()) {
        std::optional<std::uint64_t> b = queue::parse_size(a.mem);
        if (!b) return usage_error("--mem " + a.mem + ": a size like 64G or 512M");
        s.memory_bytes = *b;
    }
    if (!a.after.empty()) {
        Result<queue::After> after = queue::parse_after(a.after);
        if (!after.ok()) return usage_error("--after " + a.after + ": " + after.error().message + " (Slurm job ids)");
        s.after = after->jobs;
        s.after_ok = after->ok;
    }
    s.requeue = a.retries > 0;
    s.hold = a.hold;
    // The nodes run the baton that submitted (a cluster shares its software, as it shares the
    // command's own files).
    char self[PATH_MAX];
    s.baton = ::realpath("/proc/self/exe", self) ? self : "baton";
    if (Status can = queue::check_sbatch(s); !can.ok()) return usage_error("--slurm: " + can.error().message);
    const std::string script = queue::sbatch_script(s);
    if (a.dry_run) return write_stdout(script) ? kExitOk : kExitFailure;

    Result<queue::ProgramOutput> r = slurm({"sbatch", "--parsable"}, script);
    if (!r.ok()) return runtime_error(r.error().message);
    if (r->exit_status != 0) return runtime_error("sbatch refused the job: " + error_line(r->err));
    Result<std::int64_t> id = queue::parse_sbatch_id(r->out);
    if (!id.ok()) return runtime_error(id.error().message);
    const std::string file = jobs_file(config_path);
    if (Status w = queue::remember_slurm_job(file, {*id, unix_millis(), cwd, s.name}); !w.ok())
        std::fprintf(stderr, "baton: slurm:%lld was submitted, but baton queue will not list it: %s\n",
                     static_cast<long long>(*id), w.error().message.c_str());
    const std::string name = "slurm:" + std::to_string(*id);
    if (a.json) return print({{"ok", true}, {"id", name}, {"slurm_id", *id}, {"state", "submitted"}});
    return write_stdout(name + "\n") ? kExitOk : kExitFailure;
}

json slurm_queue_rows(bool all, const std::string& config_path, std::string& problem) {
    json rows = json::array();
    std::vector<queue::RememberedJob> known = queue::remembered_slurm_jobs(jobs_file(config_path));
    if (known.empty()) return rows;
    std::vector<std::int64_t> ids;
    std::set<std::int64_t> seen;
    for (auto it = known.rbegin(); it != known.rend() && ids.size() < kMaxListed; ++it)
        if (seen.insert(it->id).second) ids.push_back(it->id);
    std::sort(ids.begin(), ids.end());
    std::map<std::int64_t, queue::SlurmJob> found = lookup(ids, problem);
    for (std::int64_t id : ids) {
        auto it = found.find(id);
        if (it != found.end()) {
            if (all || queue::slurm_state_open(it->second.state))
                rows.push_back(row(it->second, remembered(known, id)));
        } else if (all && problem.empty()) {
            // Gone from slurmctld and no accounting to read: it ended, how is not known here.
            queue::SlurmJob gone;
            gone.id = id;
            gone.state = "ended";
            json o = row(gone, remembered(known, id));
            o["note"] = "slurmctld no longer holds it and the cluster keeps no accounting that sacct could read";
            rows.push_back(o);
        }
    }
    return rows;
}

int run_slurm_command(SlurmOp op, const QueueArgs& a, std::int64_t id, const std::string& config_path) {
    const std::string ids = std::to_string(id), name = "slurm:" + ids;
    auto act = [&](std::vector<std::string> argv, const std::string& outcome) {
        Result<queue::ProgramOutput> r = slurm(argv);
        if (!r.ok()) return runtime_error(r.error().message);
        // (scancel -v of a job Slurm does not know says so on stderr, and exits 0)
        if (r->exit_status != 0 || r->err.find("error:") != std::string::npos)
            return runtime_error(argv[0] + " " + name + ": " + error_line(r->err + r->out));
        if (a.json) return print(json::array({{{"id", name}, {"state", outcome}}}));
        return write_stdout("job " + name + ": " + outcome + "\n") ? kExitOk : kExitFailure;
    };
    switch (op) {
        case SlurmOp::cancel:
            // -v: without it scancel says nothing of a job it does not know (and exits 0 either way)
            return act({"scancel", "-v", ids}, "cancelling");
        case SlurmOp::hold:
            return act({"scontrol", "hold", ids}, "held");
        case SlurmOp::release:
            return act({"scontrol", "release", ids}, "released");
        case SlurmOp::retry:
            return act({"scontrol", "requeue", ids}, "requeued");
        case SlurmOp::show: {
            Result<queue::ProgramOutput> r = slurm({"scontrol", "show", "job", ids});
            if (!r.ok()) return runtime_error(r.error().message);
            if (r->exit_status == 0) {
                if (!a.json) return write_stdout(printable_text(r->out)) ? kExitOk : kExitFailure;
                json o = {{"id", name}, {"slurm_id", id}};
                for (const auto& [k, v] : scontrol_fields(r->out)) o["scontrol"][k] = v;
                return print(o);
            }
            // Gone from slurmctld: what accounting kept.
            Result<queue::SlurmJob> j = one(id);
            if (!j.ok()) return runtime_error(name + ": " + j.error().message);
            json o = row(*j, nullptr);
            if (a.json) return print(o);
            std::string out;
            for (const auto& [k, v] : o.items())
                out += fmt::format("{:<12} {}\n", k + ":", printable(v.is_string() ? v.get<std::string>() : v.dump()));
            return write_stdout(out) ? kExitOk : kExitFailure;
        }
        case SlurmOp::logs: {
            // The job's files are where the script sent them: baton-ID.out and .err in its directory.
            const std::vector<queue::RememberedJob> known = queue::remembered_slurm_jobs(jobs_file(config_path));
            const queue::RememberedJob* r = remembered(known, id);
            if (!r) return runtime_error(name + " was not submitted by this user's baton submit --slurm");
            const std::string path = r->cwd + "/baton-" + ids + (a.stderr_stream ? ".err" : ".out");
            off_t offset = 0;
            for (;;) {
                // The state first, then the file: what the job wrote before it ended is all read.
                bool ended = true;
                if (a.follow) {
                    Result<queue::SlurmJob> j = one(id);
                    if (!j.ok()) return runtime_error(name + ": " + j.error().message);
                    ended = !queue::slurm_state_open(j->state);
                }
                const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
                if (fd < 0 && ended)
                    return runtime_error("no output of " + name + " at " + path +
                                         " (Slurm writes it once the job starts)");
                if (fd >= 0) {
                    char buf[65536];
                    ssize_t n;
                    while ((n = ::pread(fd, buf, sizeof buf, offset)) > 0) {
                        if (!write_stdout(std::string(buf, static_cast<std::size_t>(n)))) {
                            ::close(fd);
                            return kExitFailure;
                        }
                        offset += n;
                    }
                    ::close(fd);
                }
                if (ended) return kExitOk;
                std::this_thread::sleep_for(std::chrono::milliseconds(500));
            }
        }
        case SlurmOp::wait:
            for (;;) {
                Result<queue::SlurmJob> j = one(id);
                if (!j.ok()) return runtime_error(name + ": " + j.error().message);
                if (!queue::slurm_state_open(j->state)) {
                    if (a.json) print(row(*j, nullptr));
                    if (j->state == "completed") return 0;
                    if (j->exit_code && *j->exit_code != 0) return *j->exit_code & 255;
                    return kExitFailure;
                }
                std::this_thread::sleep_for(std::chrono::seconds(1));
            }
    }
    return kExitFailure;
}

}  // namespace baton::cli
