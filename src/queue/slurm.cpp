#include "queue/slurm.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)
#include <fstream>
#include <poll.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "core/text_parse.hpp"

namespace baton::queue {

namespace {

// A value as sbatch reads it from an #SBATCH line: in double quotes when it holds a space (sbatch
// honours them there, without a shell's escapes); a double quote or a control character, which it
// could not take, becomes '_' (names; check_sbatch() refuses such a directory).
std::string directive_value(const std::string& value) {
    std::string v = value;
    bool space = false;
    for (char& c : v) {
        if (c == '"' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
        space = space || c == ' ';
    }
    return space ? "\"" + v + "\"" : v;
}

std::vector<std::string> split(const std::string& line, char sep, std::size_t fields) {
    // The last field takes the rest of the line (a job name may hold the separator).
    std::vector<std::string> out;
    std::size_t at = 0;
    while (out.size() + 1 < fields) {
        const std::size_t next = line.find(sep, at);
        if (next == std::string::npos) return {};
        out.push_back(line.substr(at, next - at));
        at = next + 1;
    }
    out.push_back(line.substr(at));
    return out;
}

std::optional<std::int64_t> number(const std::string& s) {
    return text::parse_digits<std::int64_t>(s);
}

std::string lower_first_word(const std::string& s) {
    std::string w = s.substr(0, s.find(' '));  // sacct: "CANCELLED by 1000"
    std::transform(w.begin(), w.end(), w.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return w;
}

// "gres:gpu:2", "gres/gpu:a100:2", "gpu:1" -> 2, 2, 1; "N/A" -> 0.
unsigned gpu_count(const std::string& tres) {
    const std::size_t gpu = tres.find("gpu");
    if (gpu == std::string::npos) return 0;
    const std::size_t colon = tres.rfind(':');
    if (colon == std::string::npos || colon < gpu) return 1;
    std::optional<std::int64_t> n = number(tres.substr(colon + 1, tres.find_first_of(",(", colon) - colon - 1));
    return n ? static_cast<unsigned>(*n) : 0;
}

// squeue gives a pending job its expected start and end, and a running one its time limit as its
// end: only a started job has a start, only an ended one an end.
void settle(SlurmJob& j) {
    if (j.state == "pending") j.start_ms = std::nullopt;
    if (slurm_state_open(j.state)) j.end_ms = std::nullopt;
}

}  // namespace

const char* const kSqueueFormat = "%i|%T|%u|%V|%S|%e|%b|%C|%r|%Z|%j";
const char* const kSacctFields = "JobIDRaw,State,User,Submit,Start,End,AllocCPUS,ExitCode,WorkDir,JobName";

std::string sbatch_script(const SlurmSubmit& s) {
    std::string out = "#!/bin/sh\n# Written by baton submit --slurm (docs/queue.md, \"Handing jobs to Slurm\").\n";
    auto directive = [&](const std::string& d) { out += "#SBATCH " + d + "\n"; };
    directive("--job-name=" + directive_value(s.name));
    directive("--chdir=" + directive_value(s.cwd));
    directive("--output=baton-%j.out");
    directive("--error=baton-%j.err");
    if (s.nodes) {
        directive(fmt::format("--nodes={}", s.nodes));
        directive("--ntasks-per-node=1");
    }
    if (s.gpus_per_node) directive(fmt::format("--gpus-per-node={}", s.gpus_per_node));
    if (s.cpus) directive((s.gpus_per_node ? "--cpus-per-gpu=" : "--cpus-per-task=") + std::to_string(*s.cpus));
    // Slurm's M is a mebibyte: a size that is not a whole number of them is rounded up.
    if (s.memory_bytes) directive(fmt::format("--mem={}M", (s.memory_bytes + (1u << 20) - 1) >> 20));
    if (!s.after.empty()) {
        std::string ids;
        for (std::int64_t a : s.after) ids += ":" + std::to_string(a);
        directive(std::string("--dependency=") + (s.after_ok ? "afterok" : "afterany") + ids);
    }
    if (s.requeue) directive("--requeue");
    if (s.hold) directive("--hold");
    // (a control character in the name would break the script's lines: '_', as in the directive)
    std::string name = s.name;
    for (char& c : name)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
    out += "exec " + sh_quoted(s.baton) + " run --name " + sh_quoted(name) + " --";
    for (const std::string& a : s.argv) out += " " + sh_quoted(a);
    return out + "\n";
}

Status check_sbatch(const SlurmSubmit& s) {
    for (char c : s.cwd)
        if (c == '"' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            return make_error(ErrorCode::invalid_argument, "the directory " + s.cwd +
                                                               " holds a character an #SBATCH line cannot carry (\" or "
                                                               "a control character): give --cwd another");
    return Ok{};
}

Result<std::int64_t> parse_sbatch_id(const std::string& output) {
    std::string first = output.substr(0, output.find('\n'));
    first = first.substr(0, first.find(';'));
    std::optional<std::int64_t> id = number(first);
    if (!id || *id <= 0) return make_error("sbatch answered '" + first + "', not a job id");
    return *id;
}

std::optional<std::int64_t> parse_slurm_time(const std::string& text) {
    std::tm tm{};
    if (text.size() != 19 || !strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return std::nullopt;
    tm.tm_isdst = -1;
    const std::time_t t = std::mktime(&tm);
    if (t == static_cast<std::time_t>(-1)) return std::nullopt;
    return static_cast<std::int64_t>(t) * 1000;
}

bool slurm_state_open(const std::string& state) {
    for (const char* s : {"pending", "running", "configuring", "completing", "suspended", "requeued", "requeue_hold",
                          "requeue_fed", "resizing", "signaling", "stage_out", "stopped", "resv_del_hold"})
        if (state == s) return true;
    return false;
}

namespace {

// The jobs in `text`, one per line split at '|' into `fields`: the first six are the id, state,
// user, submit, start and end (kSqueueFormat and kSacctFields both begin so), `rest` reads the
// others. Lines that are not a job's (a step's "123.batch", noise) are skipped.
template <typename Rest>
std::vector<SlurmJob> parse_jobs(const std::string& text, std::size_t fields, Rest rest) {
    std::vector<SlurmJob> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const std::vector<std::string> f = split(line, '|', fields);
        if (f.empty()) continue;
        std::optional<std::int64_t> id = number(f[0]);
        if (!id || *id <= 0) continue;  // (Slurm's job ids start at 1)
        SlurmJob j;
        j.id = *id;
        j.state = lower_first_word(f[1]);
        j.user = f[2];
        j.submit_ms = parse_slurm_time(f[3]);
        j.start_ms = parse_slurm_time(f[4]);
        j.end_ms = parse_slurm_time(f[5]);
        settle(j);
        rest(f, j);
        out.push_back(std::move(j));
    }
    return out;
}

}  // namespace

std::vector<SlurmJob> parse_squeue(const std::string& text) {
    return parse_jobs(text, 11, [](const std::vector<std::string>& f, SlurmJob& j) {
        j.gpus = gpu_count(f[6]);
        j.cpus = static_cast<unsigned>(number(f[7]).value_or(0));
        j.reason = f[8] == "None" ? "" : f[8];
        j.cwd = f[9];
        j.name = f[10];
    });
}

std::optional<int> parse_slurm_exit_code(std::string_view code) {
    const std::size_t colon = code.find(':');
    const std::optional<std::uint64_t> c = text::parse_u64(code.substr(0, colon));
    const std::optional<std::uint64_t> sig =
        colon == std::string_view::npos ? std::optional<std::uint64_t>(0) : text::parse_u64(code.substr(colon + 1));
    if (!c || !sig || *c > 255 || *sig > 127) return std::nullopt;
    return *sig ? 128 + static_cast<int>(*sig) : static_cast<int>(*c);
}

std::vector<SlurmJob> parse_sacct(const std::string& text) {
    return parse_jobs(text, 10, [](const std::vector<std::string>& f, SlurmJob& j) {
        j.cpus = static_cast<unsigned>(number(f[6]).value_or(0));
        j.exit_code = parse_slurm_exit_code(f[7]);
        j.cwd = f[8];
        j.name = f[9];
    });
}

Status remember_slurm_job(const std::string& path, const RememberedJob& job) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return make_error("cannot write " + path + ": " + std::strerror(errno));
    std::string line = fmt::format("{}\t{}\t{}\t{}", job.id, job.submit_ms, job.cwd, job.name);
    for (char& c : line)
        if (c == '\n') c = ' ';
    line += '\n';
    // One write of one line with O_APPEND: two submits at once each add a whole line.
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    const int e = errno;
    ::close(fd);
    if (!ok) return make_error("cannot write " + path + ": " + std::strerror(e));
    return Ok{};
}

std::vector<RememberedJob> remembered_slurm_jobs(const std::string& path) {
    std::vector<RememberedJob> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        const std::vector<std::string> f = split(line, '\t', 4);
        if (f.empty()) continue;
        std::optional<std::int64_t> id = number(f[0]), at = number(f[1]);
        if (!id || !at) continue;
        out.push_back({*id, *at, f[2], f[3]});
    }
    return out;
}

std::optional<std::int64_t> slurm_job_id(const std::string& word) {
    if (word.rfind("slurm:", 0) != 0) return std::nullopt;
    std::optional<std::int64_t> id = number(word.substr(6));
    if (!id || *id <= 0) return std::nullopt;
    return id;
}

}  // namespace baton::queue
