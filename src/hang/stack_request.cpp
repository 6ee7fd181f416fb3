#include "hang/stack_request.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/text_parse.hpp"
#include "hang/stack_shim.hpp"
#include "sample/linux/pid_signal.hpp"
#include "sample/linux/proc_pid_stat.hpp"

namespace baton::hang {

namespace {

struct ProcessFacts {
    os::PidStat stat;
    std::string comm;  // stat.comm points into `text`; kept apart
    std::string text;
};

std::optional<ProcessFacts> read_stat(const std::string& proc_root, pid_t pid) {
    ProcessFacts f;
    std::optional<std::string> text = read_small_file(proc_root + "/" + std::to_string(pid) + "/stat", 4096);
    if (!text) return std::nullopt;
    f.text = std::move(*text);
    if (!os::parse_pid_stat(f.text, f.stat)) return std::nullopt;
    f.comm = std::string(f.stat.comm);
    return f;
}

// The value of `key` in a NUL-separated environment block.
std::optional<std::string> environ_value(std::string_view block, std::string_view key) {
    while (!block.empty()) {
        const std::size_t end = block.find('\0');
        const std::string_view entry = block.substr(0, end);
        if (entry.size() > key.size() && entry.substr(0, key.size()) == key && entry[key.size()] == '=')
            return std::string(entry.substr(key.size() + 1));
        if (end == std::string_view::npos) break;
        block.remove_prefix(end + 1);
    }
    return std::nullopt;
}

std::string link_target(const std::string& path) {
    char buf[PATH_MAX];
    const ssize_t n = readlink(path.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

bool looks_like_python(const std::string& exe) {
    const std::string base = exe.substr(exe.rfind('/') + 1);
    return base.find("python") != std::string::npos || base.find("pypy") != std::string::npos;
}

std::string wchan_of(const std::string& proc_root, pid_t pid) {
    const std::string w = file_value(proc_root + "/" + std::to_string(pid) + "/wchan");
    return w == "0" ? std::string() : w;
}

// Why a process that got the signal wrote no dump.
std::string silent_reason(const std::string& proc_root, pid_t pid, char state, double waited) {
    if (state == 'D') {
        const std::string w = wchan_of(proc_root, pid);
        return "it is in the kernel (state D" + (w.empty() ? std::string() : ", in " + w) +
               "): it takes no signal until that call returns (I/O, NFS, a driver)";
    }
    if (state == 'T' || state == 't') return "it is stopped (state T): the dump comes when it continues";
    if (state == 'Z' || state == 'X' || state == '?') return "it exited";
    return "no dump came within " + std::to_string(static_cast<int>(waited * 1000)) + " ms (state " +
           std::string(1, state) + ")";
}

// One target's request in flight.
struct Pending {
    int fd = -1;
    bool signalled = false, done = false;
    off_t size = 0;
    double changed_at = 0, signalled_at = 0;
};

}  // namespace

Result<StackTarget> find_stack_target(pid_t pid, const std::string& proc_root) {
    const std::string dir = proc_root + "/" + std::to_string(pid);
    struct stat st {};
    if (pid <= 0 || stat(dir.c_str(), &st) != 0)
        return make_error(ErrorCode::not_found, "no process " + std::to_string(pid));
    std::optional<ProcessFacts> facts = read_stat(proc_root, pid);
    if (!facts || facts->stat.state == 'Z' || facts->stat.state == 'X')
        return make_error(ErrorCode::not_found, "process " + std::to_string(pid) + " has exited");
    const std::string who = "process " + std::to_string(pid) + " (" + facts->comm + ")";
    if (geteuid() != 0 && st.st_uid != geteuid())
        return make_error(ErrorCode::permission_denied,
                          who + " is another user's (uid " + std::to_string(st.st_uid) + "): only your own processes");
    const std::optional<std::string> env = read_small_file(dir + "/environ", 1u << 20);
    if (!env) return make_error(ErrorCode::permission_denied, "cannot read the environment of " + who);
    const std::string exe = link_target(dir + "/exe");
    const std::optional<std::string> stacks_dir = environ_value(*env, kStacksDirVariable);
    const std::optional<std::string> signal_text = environ_value(*env, kStacksSignalVariable);
    if (!stacks_dir || stacks_dir->empty() || !signal_text)
        return make_error(who + (looks_like_python(exe) ? "" : ", not a Python process,") +
                          " has no stack handler: it was not started by baton run or baton launch");
    if (!looks_like_python(exe))
        return make_error(who + " is not a Python process (" + (exe.empty() ? facts->comm : exe) +
                          "): it has no Python stacks");
    const std::optional<int> sig = text::parse_digits<int>(*signal_text);
    StackTarget t;
    t.pid = pid;
    t.ppid = static_cast<pid_t>(facts->stat.ppid);
    t.start_ticks = facts->stat.starttime;
    t.name = facts->comm;
    t.file = *stacks_dir + "/" + std::to_string(pid) + ".txt";
    if (const std::optional<std::string> rank = environ_value(*env, "RANK"))
        if (const std::optional<int> r = text::parse_digits<int>(*rank)) t.rank = *r;
    std::optional<StacksHeader> header;
    if (const std::optional<std::string> head = read_small_file(t.file, 1u << 20)) {
        const std::size_t eol = head->find('\n');
        if (eol != std::string::npos) {
            header = parse_stacks_header(std::string_view(*head).substr(0, eol + 1));
            t.header_bytes = eol + 1;
        }
    }
    if (!sig || *sig <= 0 || *sig > SIGRTMAX || !header || header->pid != pid || header->start_ticks != t.start_ticks ||
        header->exe != exe)
        return make_error(who +
                          " has no stack handler: its Python ignored PYTHONPATH (python -E or -I) or site (-S), "
                          "or it has not finished starting");
    t.signal = *sig;
    return t;
}

std::vector<StackTarget> stack_targets_under(pid_t root, bool ranks_only, const std::string& proc_root) {
    std::multimap<pid_t, pid_t> children;
    if (DIR* d = opendir(proc_root.c_str())) {
        while (const dirent* e = readdir(d)) {
            const std::optional<pid_t> pid = text::parse_digits<pid_t>(e->d_name);
            if (!pid) continue;
            if (std::optional<ProcessFacts> f = read_stat(proc_root, *pid))
                children.emplace(static_cast<pid_t>(f->stat.ppid), *pid);
        }
        closedir(d);
    }
    std::vector<StackTarget> found;
    std::vector<pid_t> todo{root};
    std::map<pid_t, std::optional<int>> rank_of;  // every process seen with a handler
    for (std::size_t i = 0; i < todo.size() && i < 100000; ++i) {
        const pid_t p = todo[i];
        if (Result<StackTarget> t = find_stack_target(p, proc_root); t.ok()) {
            rank_of[p] = t->rank;
            found.push_back(std::move(*t));
        }
        for (auto [it, end] = children.equal_range(p); it != end; ++it) todo.push_back(it->second);
    }
    const bool any_rank = std::any_of(found.begin(), found.end(), [](const StackTarget& t) { return t.rank; });
    if (ranks_only && any_rank) {
        std::erase_if(found, [&](const StackTarget& t) {
            if (!t.rank) return true;
            const auto parent = rank_of.find(t.ppid);
            return parent != rank_of.end() && parent->second == t.rank;  // a worker of that rank
        });
    }
    std::sort(found.begin(), found.end(), [](const StackTarget& a, const StackTarget& b) {
        if (a.rank != b.rank) return a.rank.value_or(INT_MAX) < b.rank.value_or(INT_MAX);
        return a.pid < b.pid;
    });
    return found;
}

std::vector<StackReply> request_stacks(const std::vector<StackTarget>& targets, double timeout_seconds,
                                       const std::string& proc_root) {
    constexpr double kSettled = 0.04;  // faulthandler writes the whole dump in its handler: quiet means done
    std::vector<StackReply> replies(targets.size());
    std::vector<Pending> pending(targets.size());
    const double start = monotonic_seconds();
    const double deadline = start + timeout_seconds;
    // Open and lock every file first (a second `baton stacks` waits for the first), empty each to its
    // header, then signal them all together.
    for (std::size_t i = 0; i < targets.size(); ++i) {
        replies[i].target = targets[i];
        Pending& p = pending[i];
        p.fd = open(targets[i].file.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (p.fd < 0) {
            replies[i].error = "its stack file cannot be opened: " + std::string(std::strerror(errno));
            continue;
        }
        while (flock(p.fd, LOCK_EX | LOCK_NB) != 0 && monotonic_seconds() < deadline) sleep_seconds(0.005);
        if (ftruncate(p.fd, static_cast<off_t>(targets[i].header_bytes)) != 0) {
            replies[i].error = "its stack file cannot be emptied: " + std::string(std::strerror(errno));
            continue;
        }
    }
    for (std::size_t i = 0; i < targets.size(); ++i) {
        if (!replies[i].error.empty()) continue;
        const int err = os::signal_process(targets[i].pid, targets[i].start_ticks, targets[i].signal, proc_root);
        if (err != 0) {
            replies[i].error =
                err == ESRCH ? "it exited" : "it cannot be signalled: " + std::string(std::strerror(err));
            continue;
        }
        pending[i].signalled = true;
        pending[i].signalled_at = pending[i].changed_at = monotonic_seconds();
        pending[i].size = static_cast<off_t>(targets[i].header_bytes);
    }
    for (;;) {
        const double now = monotonic_seconds();
        bool waiting = false;
        for (std::size_t i = 0; i < targets.size(); ++i) {
            Pending& p = pending[i];
            if (!p.signalled || p.done) continue;
            struct stat st {};
            if (fstat(p.fd, &st) == 0 && st.st_size != p.size) {
                p.size = st.st_size;
                p.changed_at = now;
            }
            if (p.size > static_cast<off_t>(targets[i].header_bytes) && now - p.changed_at >= kSettled) {
                p.done = true;
                replies[i].seconds = p.changed_at - p.signalled_at;
            } else {
                waiting = true;
            }
        }
        if (!waiting || now >= deadline) break;
        sleep_seconds(0.005);
    }
    for (std::size_t i = 0; i < targets.size(); ++i) {
        Pending& p = pending[i];
        StackReply& r = replies[i];
        const std::optional<ProcessFacts> facts = read_stat(proc_root, targets[i].pid);
        r.state = facts && facts->stat.starttime == targets[i].start_ticks ? facts->stat.state : '?';
        if (p.signalled && p.size > static_cast<off_t>(targets[i].header_bytes)) {
            std::string text(static_cast<std::size_t>(p.size) - targets[i].header_bytes, '\0');
            const ssize_t n = pread(p.fd, text.data(), text.size(), static_cast<off_t>(targets[i].header_bytes));
            text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
            r.threads = parse_faulthandler_dump(text);
            // The shim's own thread, the one that takes the signal, is not the script's.
            std::erase_if(r.threads, [](const PyThreadStack& t) {
                return !t.frames.empty() && t.frames.front().function == "_baton_signal_thread" &&
                       t.frames.back().function == "_baton_signal_thread";
            });
            r.partial = !p.done;
            if (r.threads.empty()) r.error = "its dump could not be read";
        } else if (p.signalled) {
            r.error = silent_reason(proc_root, targets[i].pid, r.state, monotonic_seconds() - p.signalled_at);
        }
        if (p.fd >= 0) close(p.fd);  // the lock goes with it
    }
    return replies;
}

}  // namespace baton::hang
