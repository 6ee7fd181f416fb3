#include "queue/slurm_client.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/printable.hpp"

namespace baton::queue {

namespace {

constexpr double kSlurmTimeout = 30;
constexpr std::size_t kMaxListed = 1000;  // the newest remembered jobs `baton queue` asks Slurm about

std::string first_line(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    return printable(line.empty() ? text : line);
}

std::string ids_text(const std::vector<std::int64_t>& ids) {
    std::string out;
    for (std::int64_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
    return out;
}

void pause(double seconds) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace

SlurmRunner system_slurm_runner() {
    return [](const std::vector<std::string>& argv, const std::string& input) {
        Result<ProgramOutput> r = run_program(argv, input, kSlurmTimeout);
        if (r.ok() && r->timed_out)
            return Result<ProgramOutput>(make_error(
                ErrorCode::timed_out, fmt::format("{} did not answer within {:.0f} s", argv[0], kSlurmTimeout)));
        return r;
    };
}

Result<ProgramOutput> SlurmClient::command(const std::vector<std::string>& argv, const std::string& input) const {
    Result<ProgramOutput> r = run_(argv, input);
    if (!r.ok()) return r.error();
    if (r->exit_status == 127 && r->err.rfind("cannot run ", 0) == 0)
        return make_error(ErrorCode::not_found,
                          first_line(r->err) + " (Slurm's client commands, Debian's slurm-client)");
    return r;
}

SlurmLookup SlurmClient::lookup(const std::vector<std::int64_t>& ids) const {
    SlurmLookup found;
    if (ids.empty()) return found;
    Result<ProgramOutput> q = command({"squeue", "-h", "-t", "all", "-j", ids_text(ids), "-o", kSqueueFormat});
    if (!q.ok()) {
        found.problem = q.error();
        return found;
    }
    // (every id unknown to slurmctld: "Invalid job id specified" and status 1; not a failure)
    if (q->exit_status != 0 && q->err.find("Invalid job id") == std::string::npos) {
        found.problem = make_error("squeue: " + first_line(q->err));
        return found;
    }
    for (SlurmJob& j : parse_squeue(q->out)) found.jobs[j.id] = std::move(j);
    std::vector<std::int64_t> rest;
    for (std::int64_t id : ids)
        if (!found.jobs.count(id)) rest.push_back(id);
    if (rest.empty()) return found;
    // Accounting is optional in a cluster: without it, sacct's failure just leaves the jobs unknown.
    Result<ProgramOutput> a = command({"sacct", "-n", "-P", "-X", "-j", ids_text(rest), "-o", kSacctFields});
    if (a.ok() && a->exit_status == 0)
        for (SlurmJob& j : parse_sacct(a->out)) found.jobs[j.id] = std::move(j);
    return found;
}

Result<SlurmJob> SlurmClient::job(std::int64_t id) const {
    SlurmLookup found = lookup({id});
    auto it = found.jobs.find(id);
    if (it == found.jobs.end()) {
        if (found.problem) return *found.problem;
        return make_error(ErrorCode::not_found, "Slurm does not know job " + std::to_string(id) +
                                                    " any more (and keeps no accounting that sacct could read)");
    }
    SlurmJob j = it->second;
    if (!j.exit_code && !slurm_state_open(j.state)) {
        Result<std::string> shown = show(id);
        if (shown.ok()) j.exit_code = parse_slurm_exit_code(parse_scontrol_fields(*shown)["ExitCode"]);
    }
    return j;
}

Result<std::int64_t> SlurmClient::submit(const std::string& script) const {
    Result<ProgramOutput> r = command({"sbatch", "--parsable"}, script);
    if (!r.ok()) return r.error();
    if (r->exit_status != 0) return make_error("sbatch refused the job: " + slurm_error_line(r->err));
    return parse_sbatch_id(r->out);
}

Status SlurmClient::act(SlurmAction action, std::int64_t id) const {
    const std::string ids = std::to_string(id);
    std::vector<std::string> argv;
    switch (action) {
        // -v: without it scancel says nothing of a job it does not know (and exits 0 either way)
        case SlurmAction::cancel:
            argv = {"scancel", "-v", ids};
            break;
        case SlurmAction::hold:
            argv = {"scontrol", "hold", ids};
            break;
        case SlurmAction::release:
            argv = {"scontrol", "release", ids};
            break;
        case SlurmAction::requeue:
            argv = {"scontrol", "requeue", ids};
            break;
    }
    Result<ProgramOutput> r = command(argv);
    if (!r.ok()) return r.error();
    // (scancel -v of a job Slurm does not know says so on stderr, and exits 0)
    if (r->exit_status != 0 || r->err.find("error:") != std::string::npos)
        return make_error(argv[0] + " slurm:" + ids + ": " + slurm_error_line(r->err + r->out));
    return Ok{};
}

Result<std::string> SlurmClient::show(std::int64_t id) const {
    Result<ProgramOutput> r = command({"scontrol", "show", "job", std::to_string(id)});
    if (!r.ok()) return r.error();
    if (r->exit_status != 0) return make_error(ErrorCode::not_found, "scontrol: " + first_line(r->err));
    return r->out;
}

std::map<std::string, std::string> parse_scontrol_fields(const std::string& text) {
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

std::string slurm_error_line(const std::string& text) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.find("error") != std::string::npos) return printable(line);
    return first_line(text);
}

int slurm_wait_status(const SlurmJob& j) {
    if (j.state == "completed") return 0;
    if (j.exit_code && *j.exit_code != 0) return *j.exit_code & 255;
    return 1;
}

nlohmann::json slurm_job_row(const SlurmJob& j, const RememberedJob* r) {
    nlohmann::json o;
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

const RememberedJob* find_remembered(const std::vector<RememberedJob>& all, std::int64_t id) {
    for (auto it = all.rbegin(); it != all.rend(); ++it)
        if (it->id == id) return &*it;
    return nullptr;
}

SlurmRows slurm_queue_rows(const SlurmClient& slurm, const std::vector<RememberedJob>& known, bool all) {
    SlurmRows out;
    if (known.empty()) return out;
    std::vector<std::int64_t> ids;
    std::set<std::int64_t> seen;
    for (auto it = known.rbegin(); it != known.rend() && ids.size() < kMaxListed; ++it)
        if (seen.insert(it->id).second) ids.push_back(it->id);
    std::sort(ids.begin(), ids.end());
    SlurmLookup found = slurm.lookup(ids);
    out.problem = found.problem;
    for (std::int64_t id : ids) {
        auto it = found.jobs.find(id);
        if (it != found.jobs.end()) {
            if (all || slurm_state_open(it->second.state))
                out.rows.push_back(slurm_job_row(it->second, find_remembered(known, id)));
        } else if (all && !found.problem) {
            // Gone from slurmctld and no accounting to read: it ended, how is not known here.
            SlurmJob gone;
            gone.id = id;
            gone.state = "ended";
            nlohmann::json o = slurm_job_row(gone, find_remembered(known, id));
            o["note"] = "slurmctld no longer holds it and the cluster keeps no accounting that sacct could read";
            out.rows.push_back(o);
        }
    }
    return out;
}

Status copy_slurm_output(const SlurmClient& slurm, std::int64_t id, const std::string& path, bool follow,
                         const std::function<bool(std::string_view)>& write, double poll_seconds) {
    const std::string name = "slurm:" + std::to_string(id);
    off_t offset = 0;
    for (;;) {
        bool ended = true;
        if (follow) {
            Result<SlurmJob> j = slurm.job(id);
            if (!j.ok()) return j.error().context(name);
            ended = !slurm_state_open(j->state);
        }
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0 && ended)
            return make_error(ErrorCode::not_found,
                              "no output of " + name + " at " + path + " (Slurm writes it once the job starts)");
        if (fd >= 0) {
            char buf[65536];
            ssize_t n;
            while ((n = ::pread(fd, buf, sizeof buf, offset)) > 0) {
                if (!write(std::string_view(buf, static_cast<std::size_t>(n)))) {
                    ::close(fd);
                    return make_error(ErrorCode::disconnected, "the output's reader went away");
                }
                offset += n;
            }
            ::close(fd);
        }
        if (ended) return Ok{};
        pause(poll_seconds);
    }
}

Result<SlurmJob> wait_for_slurm_job(const SlurmClient& slurm, std::int64_t id, double poll_seconds) {
    for (;;) {
        Result<SlurmJob> j = slurm.job(id);
        if (!j.ok()) return j.error().context("slurm:" + std::to_string(id));
        if (!slurm_state_open(j->state)) return j;
        pause(poll_seconds);
    }
}

}  // namespace baton::queue
