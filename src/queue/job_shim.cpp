#include "queue/job_shim.hpp"

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits>
#include <map>
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
#include "sample/linux/proc_pid_stat.hpp"
#include "store/run_owner.hpp"

namespace baton::queue {

namespace {

// Why a job never started when the agent went away before its go (it is queued again).
constexpr const char* kNoGoError = "the agent ended before the job could start";

std::string dump(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

struct Member {
    pid_t pid = 0;
    std::uint64_t start_ticks = 0;  // as seen in the same read: the signal checks it (os::signal_process)
    char state = '?';               // /proc/PID/stat's: 'T' stopped, 'Z' a zombie
};

// Every descendant of `root` now, from /proc (ppid links): children before grandchildren.
std::vector<Member> descendants(pid_t root) {
    std::multimap<pid_t, Member> children;
    if (DIR* d = ::opendir("/proc")) {
        while (dirent* e = ::readdir(d)) {
            const pid_t pid = text::parse_digits<pid_t>(e->d_name).value_or(0);
            if (pid <= 0) continue;
            const std::string stat = read_small_file(std::string("/proc/") + e->d_name + "/stat", 4096).value_or("");
            os::PidStat st;
            if (!os::parse_pid_stat(stat, st)) continue;
            children.emplace(static_cast<pid_t>(st.ppid), Member{static_cast<pid_t>(pid), st.starttime, st.state});
        }
        ::closedir(d);
    }
    std::vector<Member> out;
    std::vector<pid_t> frontier{root};
    while (!frontier.empty() && out.size() < 1000000) {
        std::vector<pid_t> next;
        for (pid_t p : frontier) {
            auto [lo, hi] = children.equal_range(p);
            for (auto it = lo; it != hi; ++it) {
                out.push_back(it->second);
                next.push_back(it->second.pid);
            }
        }
        frontier = std::move(next);
    }
    return out;
}

// `group`: the command's process group, given only while the command is not reaped (so its pid,
// the group's id, cannot name another group yet). Every other member by pid and start time: one
// that ended and whose pid was reused between the listing and the signal is not hit.
int signal_tree(pid_t self, pid_t group, int sig) {
    if (group > 0) ::kill(-group, sig);
    const std::vector<Member> members = descendants(self);
    for (const Member& m : members) os::signal_process(m.pid, m.start_ticks, sig);
    return static_cast<int>(members.size());
}

// baton pause: SIGSTOP to the tree, and again until a pass sees every process stopped (or gone): one
// forked while a pass ran is caught by the next. A stop takes effect at the process's next return to
// user space, so a pass may find one still running that is already signalled: it is signalled again.
void stop_tree(pid_t self, pid_t group) {
    for (int pass = 0; pass < 50; ++pass) {
        if (group > 0) ::kill(-group, SIGSTOP);
        bool all = true;
        for (const Member& m : descendants(self)) {
            if (m.state == 'T' || m.state == 't' || m.state == 'Z' || m.state == 'X') continue;
            all = false;
            os::signal_process(m.pid, m.start_ticks, SIGSTOP);
        }
        if (all) return;
        ::usleep(2000);
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
    char go = 0;
    ssize_t n = 0;
    do n = ::read(3, &go, 1);
    while (n < 0 && errno == EINTR);
    ::close(3);
    if (n != 1 || go != 'g') {
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
    if (!spec.cpus.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (unsigned c : spec.cpus)
            if (c < CPU_SETSIZE) CPU_SET(c, &set);
        if (::sched_setaffinity(0, sizeof set, &set) != 0)
            std::fprintf(stderr, "baton job-shim: job %lld: cannot pin the job to its CPUs: %s\n",
                         static_cast<long long>(spec.job), std::strerror(errno));
    }
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
    // The directories its processes write in, the owner's. DIR is the agent's (0711 or 0700): no one
    // else could have put anything there, and lstat never follows a link if someone had. One that
    // cannot be made is said in the job's stderr; the job runs without what needed it.
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
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) {
        st.error = std::string("cannot make a pipe: ") + std::strerror(errno);
        return finish();
    }
    // execvpe looks the command up on this process's PATH: the job's.
    for (const std::string& kv : spec.env)
        if (kv.rfind("PATH=", 0) == 0) ::setenv("PATH", kv.c_str() + 5, 1);
    std::vector<char*> argv, envp;
    std::vector<std::string> args = spec.argv, env;
    // The job's processes say whose they are: this supervisor's (baton clean lists them once it is gone).
    for (const std::string& kv : spec.env)
        if (kv.rfind(std::string(store::kOwnerVariable) + "=", 0) != 0) env.push_back(kv);
    env.push_back(std::string(store::kOwnerVariable) + "=" + store::owner_token(store::current_owner()));
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    const pid_t child = ::fork();
    if (child < 0) {
        st.error = std::string("cannot fork: ") + std::strerror(errno);
        return finish();
    }
    if (child == 0) {
        ::setpgid(0, 0);
        if (!cgroup_procs.empty()) {
            // Before exec and before the owner's uid: the command and all it starts are the job's.
            const int fd = ::open(cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
            char me[24];
            const int len = std::snprintf(me, sizeof me, "%d", static_cast<int>(::getpid()));
            if (fd < 0 || ::write(fd, me, static_cast<std::size_t>(len)) != len) {
                const char* why = std::strerror(errno);
                static constexpr char kCannot[] = "baton job-shim: cannot enter the job's cgroup: ";
                (void)!::write(err, kCannot, sizeof kCannot - 1);
                (void)!::write(err, why, std::strlen(why));
                (void)!::write(err, "\n", 1);
            }
            if (fd >= 0) ::close(fd);
        }
        ::dup2(null, 0);
        ::dup2(out, 1);
        ::dup2(err, 2);
        for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::signal(s, SIG_DFL);
        sigprocmask(SIG_SETMASK, &before, nullptr);
        int what[2] = {0, 0};  // 1: chdir, 2: exec, 3: the owner's identity; errno
        // The owner's groups, then gid, then uid: in that order, since each needs root; and no way back.
        if (switch_user && (::initgroups(spec.user.c_str(), spec.gid) != 0 || ::setgid(spec.gid) != 0 ||
                            ::setuid(spec.uid) != 0 || ::setuid(0) == 0)) {
            what[0] = 3;
        } else if (::chdir(spec.cwd.c_str()) != 0) {
            what[0] = 1;
        } else {
            ::execvpe(argv[0], argv.data(), envp.data());
            what[0] = 2;
        }
        what[1] = errno;
        (void)!::write(report[1], what, sizeof what);
        ::_exit(what[0] == 2 ? 127 : 126);
    }
    ::close(report[1]);
    ::close(out);
    ::close(err);
    ::close(null);
    ::setpgid(child, child);  // (also in the child: whichever runs first)
    st.started = true;
    int what[2] = {0, 0};
    ssize_t got = 0;
    do got = ::read(report[0], what, sizeof what);
    while (got < 0 && errno == EINTR);
    ::close(report[0]);
    if (got == static_cast<ssize_t>(sizeof what))
        st.error = (what[0] == 1   ? "cannot enter " + spec.cwd
                    : what[0] == 2 ? "cannot run " + spec.argv.front()
                                   : "cannot become " + spec.user + " (uid " + std::to_string(spec.uid) + ")") +
                   ": " + std::strerror(what[1]);

    bool main_done = false, ending = false, killed = false, paused = false;
    double deadline = 0;
    const pid_t self = ::getpid();
    // SIGTERM to the tree; a paused tree is continued after it, so that the signal is acted on.
    auto terminate_tree = [&](pid_t group) {
        signal_tree(self, group, SIGTERM);
        if (paused) signal_tree(self, group, SIGCONT);
        paused = false;
    };
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
            if (childless || descendants(self).empty()) break;
            if (!ending) {
                // The command ended and left processes behind (workers, a daemon): they would hold
                // its GPUs and CPUs after the queue gave them to the next job.
                ending = true;
                terminate_tree(0);
                deadline = now + spec.end_grace_seconds;
            }
        }
        if (ending && now >= deadline) {
            if (killed) break;  // SIGKILLed and still there: stuck in the kernel (D state); not waited on
            st.killed_after_grace = signal_tree(self, main_done ? 0 : child, SIGKILL);
            killed = true;
            deadline = now + 5;
        }
        const double wait = ending ? std::max(0.01, std::min(1.0, deadline - now)) : 1.0;
        timespec ts{static_cast<time_t>(wait), static_cast<long>((wait - std::floor(wait)) * 1e9)};
        siginfo_t info{};
        const int sig = ::sigtimedwait(&watched, &info, &ts);
        if ((sig == SIGTERM || sig == SIGINT) && !st.cancelled) {
            st.cancelled = true;
            double grace = 10;
            if (info.si_code == SI_QUEUE && info.si_value.sival_int >= 0) grace = info.si_value.sival_int / 1000.0;
            terminate_tree(main_done ? 0 : child);
            ending = true;
            deadline = now + grace;
        } else if (sig == SIGUSR1 && !paused && !ending) {
            stop_tree(self, main_done ? 0 : child);
            paused = true;
        } else if (sig == SIGUSR2 && paused) {
            signal_tree(self, main_done ? 0 : child, SIGCONT);
            paused = false;
        }
    }
    if (!spec.cgroup.empty()) st.oom_kills = cgroup_oom_kills(spec.cgroup);
    return finish();
}

}  // namespace baton::queue
