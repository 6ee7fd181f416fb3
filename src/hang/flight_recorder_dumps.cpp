#include "hang/flight_recorder_dumps.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/run_program.hpp"
#include "core/text_parse.hpp"

namespace baton::hang {

namespace {

// One line per file, "<index> OK <json>" or "<index> ERR <why>". The reader runs with -I -S: no
// user site, no sitecustomize (nor baton's shim), no PYTHON* variables, the standard library only.
constexpr std::string_view kReader = R"PY(import io, json, math, os, pickle, stat, sys

def _as_list(*args):
    return list(args[0]) if args else []

# PyTorch's pickler may name its list builders; they are plain lists here. Nothing else is allowed,
# so a file can run no code.
_ALLOWED = {("torch.jit._pickle", "build_intlist"), ("torch.jit._pickle", "build_doublelist"),
            ("torch.jit._pickle", "build_boollist"), ("torch.jit._pickle", "build_list"),
            ("collections", "OrderedDict")}

class _Loader(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return dict if name == "OrderedDict" else _as_list
        raise pickle.UnpicklingError("refused global %s.%s" % (module, name))

class _TooBig(Exception):
    pass

def _plain(x, budget, depth=0):
    # Shared references can make a small pickle a huge tree: the budget bounds the copy.
    budget[0] -= 1
    if budget[0] < 0 or depth > 64:
        raise _TooBig("too large or too deep")
    if isinstance(x, dict):
        return {(",".join(map(str, k)) if isinstance(k, tuple) else str(k)): _plain(v, budget, depth + 1)
                for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v, budget, depth + 1) for v in x]
    if isinstance(x, (bytes, bytearray)):
        return bytes(x).decode("utf-8", "replace")
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return repr(x)

for _i, _path in enumerate(sys.argv[1:]):
    try:
        # Not through a link, and a regular file only (the agent, as root, reads its users' dumps).
        _fd = os.open(_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(_fd, "rb") as _f:
            if not stat.S_ISREG(os.fstat(_f.fileno()).st_mode):
                raise ValueError("not a regular file")
            _data = _f.read(256 << 20)
        _dump = _Loader(io.BytesIO(_data)).load()
        if not isinstance(_dump, dict):
            raise ValueError("not a dict but %s" % type(_dump).__name__)
        _line = json.dumps(_plain(_dump, [4000000]), separators=(",", ":"), ensure_ascii=True)
        sys.stdout.write("%d OK %s\n" % (_i, _line))
    except Exception as _e:
        _why = ("%s: %s" % (type(_e).__name__, _e)).replace("\n", " ")[:300]
        sys.stdout.write("%d ERR %s\n" % (_i, _why))
    sys.stdout.flush()
)PY";

std::int64_t mtime_ns(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

std::int64_t now_ns() {
    return unix_millis() * 1'000'000;
}

}  // namespace

Status make_flight_recorder_dir(const std::string& dir) {
    if (mkdir(dir.c_str(), 0700) == 0) return Ok{};
    const int err = errno;
    struct stat st {};
    if (err == EEXIST && stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Ok{};
    return make_error(dir + ": " + std::strerror(err == EEXIST ? ENOTDIR : err));
}

std::string_view flight_recorder_reader_source() {
    return kReader;
}

FrRequest request_flight_recorder_dumps(const FlightRecorderPaths& p, const std::vector<int>& ranks) {
    FrRequest r;
    r.at_unix_ns = now_ns();
    for (int rank : ranks) {
        if (!p.enabled || p.pipe_prefix.empty()) {
            r.not_asked[rank] =
                p.enabled ? "no pipe to ask it by" : "the Flight Recorder is off (" + p.off_reason + ")";
            continue;
        }
        const std::string pipe = p.pipe_prefix + std::to_string(rank) + ".pipe";
        struct stat st {};
        if (lstat(pipe.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) {
            r.not_asked[rank] = "no Flight Recorder pipe (gloo, PyTorch before 2.3, or no NCCL process group yet)";
            continue;
        }
        // O_NONBLOCK: with no reader the open fails (ENXIO) instead of waiting for one. O_NOFOLLOW and
        // the check of what was opened: a link put there in the meantime is not written through (the
        // agent, as root, asks the pipes of its users' jobs).
        const int fd = open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            r.not_asked[rank] = errno == ENXIO ? "nobody reads its Flight Recorder pipe (the process is gone)"
                                               : std::string("its Flight Recorder pipe: ") + std::strerror(errno);
            continue;
        }
        if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
            close(fd);
            r.not_asked[rank] = "no Flight Recorder pipe (gloo, PyTorch before 2.3, or no NCCL process group yet)";
            continue;
        }
        const ssize_t n = write(fd, "1\n", 2);
        const int err = errno;
        close(fd);
        if (n <= 0) {
            r.not_asked[rank] = std::string("its Flight Recorder pipe: ") + std::strerror(err);
            continue;
        }
        r.asked.push_back(rank);
    }
    return r;
}

bool flight_recorder_dumps_ready(const FlightRecorderPaths& p, const FrRequest& r, std::int64_t now_unix_ns,
                                 std::int64_t settle_ms) {
    for (int rank : r.asked) {
        struct stat st {};
        if (lstat((p.dump_prefix + std::to_string(rank)).c_str(), &st) != 0) return false;
        const std::int64_t m = mtime_ns(st);
        if (m < r.at_unix_ns || st.st_size == 0 || now_unix_ns - m < settle_ms * 1'000'000) return false;
    }
    return true;
}

FrCollection read_flight_recorder_dumps(const std::string& python,
                                        const std::vector<std::pair<int, std::string>>& files,
                                        std::int64_t since_unix_ns, double timeout_seconds) {
    FrCollection c;
    std::vector<std::string> argv{python, "-I", "-S", "-c", std::string(kReader)};
    std::vector<int> rank_of;
    for (const auto& [rank, path] : files) {
        struct stat st {};
        if (lstat(path.c_str(), &st) != 0) {
            c.no_dump[rank] = "no dump came (" + path + ")";
            continue;
        }
        if (!S_ISREG(st.st_mode)) {  // a link is not followed
            c.no_dump[rank] = path + " is not a file";
            continue;
        }
        if (since_unix_ns && mtime_ns(st) < since_unix_ns) {
            c.no_dump[rank] = "no new dump came (" + path + " is older than the request)";
            continue;
        }
        argv.push_back(path);
        rank_of.push_back(rank);
    }
    if (rank_of.empty()) return c;
    Result<ProgramOutput> out = run_program(argv, "", timeout_seconds);
    std::vector<bool> answered(rank_of.size(), false);
    if (out.ok()) {
        std::string_view rest = out->out;
        while (!rest.empty()) {
            const std::size_t nl = rest.find('\n');
            std::string_view line = rest.substr(0, nl);
            rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
            const std::size_t sp = line.find(' ');
            const std::optional<std::size_t> i =
                sp == std::string_view::npos ? std::nullopt : text::parse_digits<std::size_t>(line.substr(0, sp));
            if (!i || *i >= rank_of.size() || answered[*i]) continue;
            answered[*i] = true;
            line = line.substr(sp + 1);
            const int rank = rank_of[*i];
            if (line.substr(0, 3) == "OK ") {
                Result<FrDump> d = parse_flight_recorder_json(line.substr(3), rank);
                if (d.ok())
                    c.dumps.push_back(std::move(*d));
                else
                    c.no_dump[rank] = "its dump is unreadable: " + d.error().message;
            } else {
                c.no_dump[rank] = "its dump is unreadable: " + std::string(line.substr(line.find(' ') + 1));
            }
        }
    }
    const std::string why = !out.ok()                 ? "the reader did not run: " + out.error().message
                            : out->timed_out          ? "the reader took longer than the time allowed"
                            : out->exit_status == 127 ? "no Python to read it with (" + python + ")"
                                                      : "the reader gave no answer for it";
    for (std::size_t i = 0; i < rank_of.size(); ++i)
        if (!answered[i]) c.no_dump[rank_of[i]] = why;
    std::sort(c.dumps.begin(), c.dumps.end(), [](const FrDump& a, const FrDump& b) { return a.rank < b.rank; });
    return c;
}

std::string interpreter_of(int pid, const std::string& proc_root) {
    char buf[PATH_MAX];
    const std::string link = proc_root + "/" + std::to_string(pid) + "/exe";
    const ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
    if (n <= 0) return "python3";
    std::string exe(buf, static_cast<std::size_t>(n));
    if (exe.size() > 10 && exe.substr(exe.size() - 10) == " (deleted)") return "python3";
    return exe;
}

}  // namespace baton::hang
