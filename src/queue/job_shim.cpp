#include "queue/job_shim.hpp"

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/base64.hpp"
#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/text_parse.hpp"
#include "queue/protocol.hpp"
#include "sample/linux/pid_signal.hpp"
#include "sample/linux/spawn.hpp"
#include "sample/linux/tree_end.hpp"
#include "store/run_owner.hpp"

namespace baton::queue {

namespace {

// Why a job never started when the agent went away before its go (it is queued again).
constexpr const char* kNoGoError = "the agent ended before the job could start";

std::string dump(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// baton pause: SIGSTOP to the tree, and again until a pass sees every process stopped (or gone): one
// forked while a pass ran is caught by the next. A stop takes effect at the process's next return to
// user space, so a pass may find one still running that is already signalled: it is signalled again.
void stop_tree(pid_t self, pid_t group) {
    for (int pass = 0; pass < 50; ++pass) {
        if (group > 0) ::kill(-group, SIGSTOP);
        bool all = true;
        for (const os::TreeMember& m : os::descendants(self)) {
            if (m.state == 'T' || m.state == 't' || m.state == 'Z' || m.state == 'X') continue;
            all = false;
            os::signal_process(m.pid, m.start_ticks, SIGSTOP);
        }
        if (all) return;
        ::usleep(2000);
    }
}

// The agent's go on fd 3 ('g'), read once: anything else (the agent went away first) is no go.
bool go_came() {
    char go = 0;
    ssize_t n = 0;
    do n = ::read(3, &go, 1);
    while (n < 0 && errno == EINTR);
    ::close(3);
    return n == 1 && go == 'g';
}

// The job's CPUs: this process's affinity, which the command inherits.
void pin_to_cpus(const ShimSpec& spec) {
    if (spec.cpus.empty()) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned c : spec.cpus)
        if (c < CPU_SETSIZE) CPU_SET(c, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0)
        std::fprintf(stderr, "baton job-shim: job %lld: cannot pin the job to its CPUs: %s\n",
                     static_cast<long long>(spec.job), std::strerror(errno));
}

// The directories its processes write in, the owner's. DIR is the agent's (0711 or 0700): no one
// else could have put anything there, and lstat never follows a link if someone had. One that
// cannot be made is said in the job's stderr; the job runs without what needed it.
void make_owner_dirs(const std::string& dir, const ShimSpec& spec, bool switch_user, int err) {
    for (const std::string& d : spec.owner_dirs) {
        struct stat ds {};
        const bool ok =
            owner_dir_allowed(dir, d) &&
            (::mkdir(d.c_str(), 0700) == 0 || (errno == EEXIST && ::lstat(d.c_str(), &ds) == 0 && S_ISDIR(ds.st_mode)));
        if (ok && switch_user) (void)!::lchown(d.c_str(), spec.uid, spec.gid);
        if (!ok) {
            const std::string line =
                "baton job-shim: cannot make " + d + ": " +
                (owner_dir_allowed(dir, d) ? std::strerror(errno) : "not a directory of the job's") + "\n";
            (void)!::write(err, line.data(), line.size());
        }
    }
}

// Watches the command `child` and its tree to the end: reaps what exits, passes the agent's cancel
// (SIGTERM, its grace in the value of a sigqueue), pause (SIGUSR1) and resume (SIGUSR2) on, and ends
// what the command left behind with the spec's grace (os::TreeEnd). The end is written to `st`.
void supervise(const ShimSpec& spec, pid_t child, const sigset_t& watched, ShimStatus& st) {
    bool main_done = false, paused = false;
    const pid_t self = ::getpid();
    // The tree: the command's group while it is not reaped (so its pid, the group's id, cannot name
    // another group yet), and every descendant by pid and start time; a paused tree is continued after a SIGTERM, so
    // that the signal is acted on. SIGKILLed and still there after 5 s: stuck in the kernel (state D), not waited on.
    os::TreeEnd ending({[&](int sig) {
                            const int reached = os::signal_tree(self, main_done ? 0 : child, sig);
                            if (sig == SIGTERM && paused) os::signal_tree(self, main_done ? 0 : child, SIGCONT);
                            if (sig == SIGTERM) paused = false;
                            return reached;
                        },
                        [] { return true; }},  // (the loop below reaps and sees when nothing is left)
                       5);
    for (;;) {
        int ws = 0;
        pid_t w;
        while ((w = ::waitpid(-1, &ws, WNOHANG)) > 0) {
            if (w != child) continue;  // an orphan of the tree, reaped
            main_done = true;
            if (WIFEXITED(ws)) {
                st.exit_status = WEXITSTATUS(ws);
            } else if (WIFSIGNALED(ws)) {
                st.signal = WTERMSIG(ws);
                st.exit_status = 128 + st.signal;
            }
        }
        // No child left means no descendant left: this process is the tree's subreaper, so every
        // orphan of it became its child. Only otherwise is /proc walked.
        const bool childless = w < 0 && errno == ECHILD;
        const double now = monotonic_seconds();
        if (main_done) {
            if (childless || os::descendants(self).empty()) break;
            // The command ended and left processes behind (workers, a daemon): they would hold
            // its GPUs and CPUs after the queue gave them to the next job.
            if (!ending.ending()) ending.begin(now, spec.end_grace_seconds);
        }
        if (ending.step(now) == os::TreeEnd::Phase::stuck) break;
        st.killed_after_grace = ending.killed();
        const double wait = ending.ending() ? std::max(0.01, std::min(1.0, ending.deadline() - now)) : 1.0;
        timespec ts{static_cast<time_t>(wait), static_cast<long>((wait - std::floor(wait)) * 1e9)};
        siginfo_t info{};
        const int sig = ::sigtimedwait(&watched, &info, &ts);
        if ((sig == SIGTERM || sig == SIGINT) && !st.cancelled) {
            st.cancelled = true;
            double grace = 10;
            if (info.si_code == SI_QUEUE && info.si_value.sival_int >= 0) grace = info.si_value.sival_int / 1000.0;
            ending.begin(now, grace);
        } else if (sig == SIGUSR1 && !paused && !ending.ending()) {
            stop_tree(self, main_done ? 0 : child);
            paused = true;
        } else if (sig == SIGUSR2 && paused) {
            os::signal_tree(self, main_done ? 0 : child, SIGCONT);
            paused = false;
        }
    }
}

}  // namespace

sigset_t supervisor_start_mask() {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR1);
    sigaddset(&mask, SIGUSR2);
    return mask;
}

std::uint64_t cgroup_oom_kills(const std::string& cgroup_dir) {
    // memory.events: "low N", "high N", "max N", "oom N", "oom_kill N", "oom_group_kill N" lines.
    const std::string text = read_small_file(cgroup_dir + "/memory.events", 4096).value_or("");
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        const std::string_view line(text.data() + at, end - at);
        constexpr std::string_view key = "oom_kill ";
        if (line.substr(0, key.size()) == key) {
            std::string_view count = line.substr(key.size());
            return text::take_u64(count).value_or(0);
        }
        at = end + 1;
    }
    return 0;
}

std::string spec_json(const ShimSpec& s) {
    nlohmann::json j;
    j["job"] = s.job;
    j["attempt"] = s.attempt;
    j["argv"] = pack_base64(s.argv);
    j["env"] = pack_base64(s.env);
    j["cwd"] = base64_encode(s.cwd);
    j["uid"] = s.uid;
    j["gid"] = s.gid;
    j["user"] = s.user;
    j["cpus"] = s.cpus;
    j["cgroup"] = s.cgroup;
    j["end_grace_seconds"] = s.end_grace_seconds;
    j["owner_dirs"] = s.owner_dirs;
    return dump(j);
}

bool owner_dir_allowed(const std::string& dir, const std::string& path) {
    if (dir.empty() || path.size() <= dir.size() + 1 || path.compare(0, dir.size(), dir) != 0 ||
        path[dir.size()] != '/' || path.find('\0') != std::string::npos)
        return false;
    std::size_t at = dir.size() + 1;
    while (at <= path.size()) {
        std::size_t end = path.find('/', at);
        if (end == std::string::npos) end = path.size();
        const std::string_view part(path.data() + at, end - at);
        if (part.empty() || part == "." || part == "..") return false;
        at = end + 1;
    }
    return true;
}

Result<ShimSpec> parse_spec_json(const std::string& text) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) return make_error("the job's spec is not a JSON object");
    try {
        ShimSpec s;
        s.job = j.at("job").get<std::int64_t>();
        s.attempt = j.at("attempt").get<int>();
        Result<std::vector<std::string>> argv = unpack_base64(j.at("argv").get<std::string>());
        Result<std::vector<std::string>> env = unpack_base64(j.at("env").get<std::string>());
        std::optional<std::string> cwd = base64_decode(j.at("cwd").get<std::string>());
        if (!argv.ok() || argv->empty() || !env.ok() || !cwd) return make_error("the job's spec is damaged");
        s.argv = std::move(*argv);
        s.env = std::move(*env);
        s.cwd = std::move(*cwd);
        s.uid = j.at("uid").get<std::uint32_t>();
        s.gid = j.at("gid").get<std::uint32_t>();
        s.user = j.at("user").get<std::string>();
        s.cpus = j.at("cpus").get<std::vector<unsigned>>();
        s.cgroup = j.value("cgroup", "");
        s.end_grace_seconds = j.value("end_grace_seconds", 10.0);
        // (a spec written before there were any: none)
        if (j.contains("owner_dirs")) s.owner_dirs = j.at("owner_dirs").get<std::vector<std::string>>();
        return s;
    } catch (const nlohmann::json::exception&) {
        return make_error("the job's spec is missing a field or has one of the wrong type");
    }
}

std::string status_json(const ShimStatus& s) {
    nlohmann::json j;
    j["started"] = s.started;
    j["no_go"] = s.no_go;
    j["exit_status"] = s.exit_status;
    j["signal"] = s.signal;
    j["cancelled"] = s.cancelled;
    j["killed_after_grace"] = s.killed_after_grace;
    j["error"] = s.error;
    j["end_ms"] = s.end_ms;
    j["oom_kills"] = s.oom_kills;
    return dump(j);
}

Result<ShimStatus> parse_status_json(const std::string& text) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) return make_error("the job's status is not a JSON object");
    try {
        ShimStatus s;
        s.started = j.at("started").get<bool>();
        s.exit_status = j.at("exit_status").get<int>();
        s.signal = j.value("signal", 0);
        s.cancelled = j.value("cancelled", false);
        s.killed_after_grace = j.value("killed_after_grace", 0);
        s.error = j.value("error", "");
        // A status written by a baton before "no_go" said so in its error alone.
        s.no_go = j.value("no_go", !s.started && s.error == kNoGoError);
        s.end_ms = j.value("end_ms", std::int64_t{0});
        s.oom_kills = j.value("oom_kills", std::uint64_t{0});
        return s;
    } catch (const nlohmann::json::exception&) {
        return make_error("the job's status is missing a field or has one of the wrong type");
    }
}

int run_job_shim(const std::string& dir) {
    ShimStatus st;
    auto finish = [&]() {
        st.end_ms = unix_millis();
        Status w = write_file_atomically(dir + "/status", status_json(st));
        if (!w.ok()) std::fprintf(stderr, "baton job-shim: %s\n", w.error().message.c_str());
        return w.ok() ? 0 : 1;
    };

    // The go from the agent comes first: nothing happens before the store says this process runs the job.
    if (!go_came()) {
        st.no_go = true;
        st.error = kNoGoError;
        return finish();
    }

    const std::optional<std::string> text = read_small_file(dir + "/spec");
    Result<ShimSpec> parsed =
        text ? parse_spec_json(*text) : Result<ShimSpec>(make_error("cannot read " + dir + "/spec"));
    if (!parsed.ok()) {
        st.error = parsed.error().message;
        return finish();
    }
    const ShimSpec& spec = *parsed;

    sigset_t watched;
    sigemptyset(&watched);
    for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&watched, s);
    sigset_t before;
    sigprocmask(SIG_BLOCK, &watched, &before);
    // The command's mask: what this process had, without the pause and resume it started with.
    sigdelset(&before, SIGUSR1);
    sigdelset(&before, SIGUSR2);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);

    // The supervisor stays out of the job's cgroup (in the agent's leaf beside D/jobs): the cgroup
    // has memory.oom.group, so an out-of-memory kill there takes every process in it, and the
    // supervisor must live on to write how the job ended. The command enters it (below).
    const std::string cgroup_procs = spec.cgroup.empty() ? "" : spec.cgroup + "/cgroup.procs";
    pin_to_cpus(spec);
    // The shim keeps its privileges (it writes the status and ends the whole tree whatever the job
    // does to itself); the command takes the owner's groups, gid and uid between fork and exec.
    const bool switch_user = ::geteuid() == 0 && spec.uid != 0;
    if (!switch_user && ::geteuid() != spec.uid) {
        st.error = "the agent runs as uid " + std::to_string(::geteuid()) + " and cannot start a job of uid " +
                   std::to_string(spec.uid);
        return finish();
    }

    // (O_NOFOLLOW: never through a link, whoever could have made one)
    const int out = ::open((dir + "/stdout").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    const int err = ::open((dir + "/stderr").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || err < 0 || null < 0) {
        st.error = "cannot open the job's logs in " + dir + ": " + std::strerror(errno);
        return finish();
    }
    make_owner_dirs(dir, spec, switch_user, err);
    // execvpe looks the command up on this process's PATH: the job's.
    for (const std::string& kv : spec.env)
        if (kv.rfind("PATH=", 0) == 0) ::setenv("PATH", kv.c_str() + 5, 1);
    os::SpawnSpec how;
    how.argv = spec.argv;
    how.env.emplace();
    // The job's processes say whose they are: this supervisor's (baton clean lists them once it is gone).
    for (const std::string& kv : spec.env)
        if (kv.rfind(std::string(store::kOwnerVariable) + "=", 0) != 0) how.env->push_back(kv);
    how.env->push_back(std::string(store::kOwnerVariable) + "=" + store::owner_token(store::current_owner()));
    how.stdin_fd = null;
    how.stdout_fd = out;
    how.stderr_fd = err;
    how.cgroup_procs = cgroup_procs;  // before exec and before the owner's uid: all it starts is the job's
    if (switch_user) how.identity = os::identity_of(spec.user, spec.uid, spec.gid);
    how.cwd = spec.cwd;
    how.mask = before;
    Result<pid_t> started = os::spawn(how);
    ::close(out);
    ::close(err);
    ::close(null);
    if (!started.ok()) {
        st.error = started.error().message;
        st.exit_status = os::spawn_failure_status(started.error());
        st.started = st.exit_status != 0;  // it was forked, and failed before its exec
        return finish();
    }
    const pid_t child = *started;
    st.started = true;

    supervise(spec, child, watched, st);
    if (!spec.cgroup.empty()) st.oom_kills = cgroup_oom_kills(spec.cgroup);
    return finish();
}

}  // namespace baton::queue
