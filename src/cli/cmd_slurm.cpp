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
#include "queue/slurm_client.hpp"
#include "run/run_command.hpp"
#include "store/history.hpp"

namespace baton::cli {

namespace {

using nlohmann::json;

// The remembered Slurm jobs go beside the history.
std::string jobs_file(const std::string& config_path) {
    return state_file("slurm-jobs", config_path);
}

const queue::SlurmClient& slurm() {
    static const queue::SlurmClient client(queue::system_slurm_runner());
    return client;
}

// The nodes run the baton that submitted (a cluster shares its software, as it shares the
// command's own files).
std::string this_baton() {
    char self[PATH_MAX];
    return ::realpath("/proc/self/exe", self) ? self : "baton";
}

int print(const json& j) {
    return write_stdout(j.dump(2, ' ', false, json::error_handler_t::replace) + "\n") ? kExitOk : kExitFailure;
}

int show(const QueueArgs& a, std::int64_t id) {
    const std::string name = "slurm:" + std::to_string(id);
    Result<std::string> shown = slurm().show(id);
    if (shown.ok()) {
        if (!a.json) return write_stdout(printable_text(*shown)) ? kExitOk : kExitFailure;
        json o = {{"id", name}, {"slurm_id", id}};
        for (const auto& [k, v] : queue::parse_scontrol_fields(*shown)) o["scontrol"][k] = v;
        return print(o);
    }
    if (!shown.is(ErrorCode::not_found)) return runtime_error(shown.error().message);
    // Gone from slurmctld: what accounting kept.
    Result<queue::SlurmJob> j = slurm().job(id);
    if (!j.ok()) return runtime_error(name + ": " + j.error().message);
    json o = queue::slurm_job_row(*j, nullptr);
    if (a.json) return print(o);
    std::string out;
    for (const auto& [k, v] : o.items())
        out += fmt::format("{:<12} {}\n", k + ":", printable(v.is_string() ? v.get<std::string>() : v.dump()));
    return write_stdout(out) ? kExitOk : kExitFailure;
}

// The job's files are where the script sent them: baton-ID.out and .err in its directory.
int logs(const QueueArgs& a, std::int64_t id, const std::string& config_path) {
    const std::string ids = std::to_string(id), name = "slurm:" + ids;
    const std::vector<queue::RememberedJob> known = queue::remembered_slurm_jobs(jobs_file(config_path));
    const queue::RememberedJob* r = queue::find_remembered(known, id);
    if (!r) return runtime_error(name + " was not submitted by this user's baton submit --slurm");
    const std::string path = r->cwd + "/baton-" + ids + (a.stderr_stream ? ".err" : ".out");
    Status copied = queue::copy_slurm_output(slurm(), id, path, a.follow,
                                             [](std::string_view bytes) { return write_stdout(std::string(bytes)); });
    if (copied.is(ErrorCode::disconnected)) return kExitFailure;  // the reader went away: nothing to say
    return copied.ok() ? kExitOk : runtime_error(copied.error().message);
}

}  // namespace

int run_submit_slurm(const QueueArgs& a, const std::vector<std::string>& argv, const std::string& cwd,
                     const std::string& config_path) {
    Result<queue::SlurmSubmit> s = slurm_submission(a.submit, argv, cwd, this_baton());
    if (!s.ok()) return usage_error(s.error().message);
    const std::string script = queue::sbatch_script(*s);
    if (a.submit.dry_run) return write_stdout(script) ? kExitOk : kExitFailure;
    Result<std::int64_t> id = slurm().submit(script);
    if (!id.ok()) return runtime_error(id.error().message);
    if (Status w = queue::remember_slurm_job(jobs_file(config_path), {*id, unix_millis(), cwd, s->name}); !w.ok())
        std::fprintf(stderr, "baton: slurm:%lld was submitted, but baton queue will not list it: %s\n",
                     static_cast<long long>(*id), w.error().message.c_str());
    const std::string name = "slurm:" + std::to_string(*id);
    if (a.json) return print({{"ok", true}, {"id", name}, {"slurm_id", *id}, {"state", "submitted"}});
    return write_stdout(name + "\n") ? kExitOk : kExitFailure;
}

queue::SlurmRows slurm_queue_rows(bool all, const std::string& config_path) {
    return queue::slurm_queue_rows(slurm(), queue::remembered_slurm_jobs(jobs_file(config_path)), all);
}

int run_slurm_command(SlurmOp op, const QueueArgs& a, std::int64_t id, const std::string& config_path) {
    const std::string name = "slurm:" + std::to_string(id);
    auto act = [&](queue::SlurmAction action, const std::string& outcome) {
        if (Status done = slurm().act(action, id); !done.ok()) return runtime_error(done.error().message);
        if (a.json) return print(json::array({{{"id", name}, {"state", outcome}}}));
        return write_stdout("job " + name + ": " + outcome + "\n") ? kExitOk : kExitFailure;
    };
    switch (op) {
        case SlurmOp::cancel:
            return act(queue::SlurmAction::cancel, "cancelling");
        case SlurmOp::hold:
            return act(queue::SlurmAction::hold, "held");
        case SlurmOp::release:
            return act(queue::SlurmAction::release, "released");
        case SlurmOp::retry:
            return act(queue::SlurmAction::requeue, "requeued");
        case SlurmOp::show:
            return show(a, id);
        case SlurmOp::logs:
            return logs(a, id, config_path);
        case SlurmOp::wait: {
            Result<queue::SlurmJob> j = queue::wait_for_slurm_job(slurm(), id);
            if (!j.ok()) return runtime_error(j.error().message);
            if (a.json) print(queue::slurm_job_row(*j, nullptr));
            return queue::slurm_wait_status(*j);
        }
    }
    return kExitFailure;
}

}  // namespace baton::cli
