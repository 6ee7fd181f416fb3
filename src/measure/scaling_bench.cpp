#include "measure/scaling_bench.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/text_parse.hpp"
#include "measure/file_text.hpp"
#include "core/clock.hpp"
#include "core/percentile.hpp"
#include "sample/linux/spawn.hpp"
#include "sample/linux/tree_end.hpp"
#include "store/history_runs.hpp"

namespace baton::measure {

namespace {

namespace fs = std::filesystem;

// Runs one launch for `seconds`, its console to `log`, then ends it (SIGTERM: the launcher ends its
// ranks; SIGKILL 30 s later if it has not). The exit status, 0 when it was ended on time.
Result<int> launch_for(const std::vector<std::string>& argv, const std::string& log, double seconds,
                       const std::atomic<bool>* stop, bool& ended_early) {
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return make_error(fmt::format("cannot write {}: {}", log, std::strerror(errno)));
    os::SpawnSpec how;
    how.argv = argv;
    how.stdin_fd = os::kDevNull;
    how.stdout_fd = how.stderr_fd = out;
    Result<pid_t> started = os::spawn(how);
    ::close(out);
    if (!started.ok()) return started.error();
    const pid_t pid = *started;
    const double start = monotonic_seconds();
    int status = 0;
    os::TreeEnd ending({[pid](int sig) { return ::kill(pid, sig) == 0 ? 1 : 0; },
                        [pid, &status] { return ::waitpid(pid, &status, WNOHANG) != pid; }},
                       3600);
    for (;;) {
        const double now = monotonic_seconds();
        if (!ending.ending()) {
            if (::waitpid(pid, &status, WNOHANG) == pid) break;
            if (now - start >= seconds || (stop && stop->load())) ending.begin(now, 30);
        } else if (ending.step(now) == os::TreeEnd::Phase::gone) {
            break;
        }
        ::usleep(50000);
    }
    ended_early = !ending.ending();
    if (!ended_early) return 0;  // ended by us: its status says so, not the training
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

Result<std::vector<int>> parse_sizes(const std::string& text) {
    std::vector<int> out;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ',')) {
        const std::optional<int> size = part.size() <= 4 ? text::parse_digits<int>(part) : std::nullopt;
        if (!size) return make_error("--gpus " + text + ": expected sizes such as 1,2,4,8");
        const int n = *size;
        if (n < 1 || n > 1024) return make_error("--gpus " + text + ": each size is 1 to 1024");
        if (!out.empty() && n <= out.back()) return make_error("--gpus " + text + ": sizes go up, each once");
        out.push_back(n);
    }
    if (out.empty()) return make_error("--gpus " + text + ": expected sizes such as 1,2,4,8");
    return out;
}

std::optional<double> steady_throughput(const std::vector<store::StepEvent>& steps, double warmup_seconds,
                                        bool& by_samples) {
    if (steps.empty()) return std::nullopt;
    std::int64_t first = steps.front().t_ms;
    for (const store::StepEvent& s : steps) first = std::min(first, s.t_ms);
    const std::int64_t from = first + static_cast<std::int64_t>(warmup_seconds * 1000);
    std::map<int, std::vector<const store::StepEvent*>> ranks;
    for (const store::StepEvent& s : steps) ranks[s.rank].push_back(&s);
    by_samples =
        std::all_of(steps.begin(), steps.end(), [](const store::StepEvent& s) { return s.samples.has_value(); });
    double total = 0;
    bool any = false;
    for (auto& [rank, list] : ranks) {
        std::sort(list.begin(), list.end(),
                  [](const store::StepEvent* a, const store::StepEvent* b) { return a->t_ms < b->t_ms; });
        // The steps ending after the warm-up; the one before them marks where their time starts.
        std::size_t i = 0;
        while (i < list.size() && list[i]->t_ms < from) ++i;
        if (i == list.size()) continue;
        const std::size_t base = i > 0 ? i - 1 : 0;
        if (list.size() - base < 2) continue;
        double count = 0;
        for (std::size_t k = base + 1; k < list.size(); ++k)
            count += by_samples ? static_cast<double>(*list[k]->samples) : 1.0;
        const double seconds = static_cast<double>(list.back()->t_ms - list[base]->t_ms) / 1000.0;
        if (seconds <= 0) continue;
        total += count / seconds;
        any = true;
    }
    if (!any) return std::nullopt;
    return total;
}

std::optional<double> regex_throughput(const std::vector<std::string>& rank_outputs, const std::regex& re,
                                       double skip_share, int ranks, std::string& note) {
    double total = 0;
    int printing = 0;
    for (const std::string& out : rank_outputs) {
        std::vector<double> values;
        std::istringstream lines(out);
        std::string line;
        while (std::getline(lines, line)) {
            std::smatch m;
            if (!std::regex_search(line, m, re)) continue;
            const std::string figure = m.size() > 1 ? m[1].str() : m[0].str();
            char* end = nullptr;
            const double v = std::strtod(figure.c_str(), &end);
            if (end != figure.c_str() && std::isfinite(v) && v >= 0) values.push_back(v);
        }
        if (values.empty()) continue;
        const std::size_t skip =
            std::min(values.size() - 1, static_cast<std::size_t>(skip_share * static_cast<double>(values.size())));
        total += percentile(std::vector<double>(values.begin() + static_cast<std::ptrdiff_t>(skip), values.end()), 50);
        ++printing;
    }
    if (printing == 0) return std::nullopt;
    note.clear();
    if (printing < ranks) {
        note = fmt::format("{} of {} ranks print the metric: their sum is scaled to {} ranks", printing, ranks, ranks);
        total *= static_cast<double>(ranks) / printing;
    }
    return total;
}

std::vector<ScalingRow> scaling_rows(const std::vector<std::pair<int, double>>& throughputs, double alarm) {
    std::vector<ScalingRow> rows;
    if (throughputs.empty()) return rows;
    const auto& [base_n, base_t] = throughputs.front();
    const double per_rank = base_n > 0 ? base_t / base_n : 0;
    double best_before = -1;
    for (const auto& [n, t] : throughputs) {
        ScalingRow r;
        r.ranks = n;
        r.throughput = t;
        r.ideal = per_rank * n;
        r.efficiency = r.ideal > 0 ? t / r.ideal : 0;
        r.slower = best_before >= 0 && t < best_before;
        r.below_alarm = r.efficiency < alarm;
        best_before = std::max(best_before, t);
        rows.push_back(r);
    }
    return rows;
}

Result<BenchReport> run_scaling_bench(const ScalingOptions& o) {
    std::error_code ec;
    fs::create_directories(o.work_dir, ec);
    if (ec) return make_error(fmt::format("cannot create {}: {}", o.work_dir, ec.message()));
    const std::string logs = o.work_dir + "/logs";
    const std::string db = o.work_dir + "/scaling.db";
    std::optional<std::regex> re;
    if (!o.metric_regex.empty()) re.emplace(o.metric_regex);  // checked by the caller
    std::vector<std::pair<int, double>> measured;
    std::vector<std::string> notes;
    bool by_samples = true;
    for (int n : o.sizes) {
        const std::string run_id = fmt::format("scaling-{}", n);
        std::vector<std::string> argv = {o.baton,
                                         "launch",
                                         "--nproc-per-node",
                                         std::to_string(n),
                                         "--log-dir",
                                         logs,
                                         "--run-id",
                                         run_id,
                                         "--db",
                                         db,
                                         "--name",
                                         run_id,
                                         "--quiet",
                                         "--local-ranks-filter",
                                         "0"};
        argv.insert(argv.end(), o.launch_args.begin(), o.launch_args.end());
        argv.push_back("--");
        argv.insert(argv.end(), o.command.begin(), o.command.end());
        const std::string console = fmt::format("{}/launch-{}.log", o.work_dir, n);
        bool ended_early = false;
        Result<int> status = launch_for(argv, console, o.seconds, o.stop, ended_early);
        if (!status.ok()) return status.error();
        if (o.stop && o.stop->load()) return make_error("interrupted");
        if (*status != 0)
            return make_error(
                fmt::format("the training failed with {} ranks (exit {}); its console: {}, its ranks' "
                            "logs: {}/{}",
                            n, *status, console, logs, run_id));
        std::optional<double> throughput;
        if (re) {
            std::vector<std::string> outputs;
            for (int r = 0; r < n; ++r) {
                const std::string dir = fmt::format("{}/{}/attempt_0/{}", logs, run_id, r);
                outputs.push_back(file_text(dir + "/stdout.log") + file_text(dir + "/stderr.log"));
            }
            std::string note;
            throughput = regex_throughput(outputs, *re, o.warmup_seconds / o.seconds, n, note);
            if (!note.empty()) notes.push_back(fmt::format("{} ranks: {}", n, note));
            by_samples = false;
        } else if (Result<store::History> h = store::History::open(db, store::HistoryAccess::read); h.ok()) {
            Result<std::vector<store::RunRecord>> runs = h->run_reads().runs();
            if (runs.ok() && !runs->empty()) {
                Result<std::vector<store::StepEvent>> steps = h->run_reads().steps(runs->back().id);
                bool samples = false;
                if (steps.ok()) throughput = steady_throughput(*steps, o.warmup_seconds, samples);
                by_samples = by_samples && samples;
            }
        }
        if (!throughput)
            return make_error(fmt::format(
                "no throughput with {} ranks after {:g} s of warm-up: {} (console: {})", n, o.warmup_seconds,
                re ? "no line of the ranks' output matched --metric-regex"
                   : "the training reported no steps (wrap its loader with baton.torch.watch, or give --metric-regex)",
                console));
        measured.emplace_back(n, *throughput);
        if (ended_early)
            notes.push_back(
                fmt::format("{} ranks: the training ended before {:g} s; its steps until then count", n, o.seconds));
    }

    BenchReport r;
    r.bench = "scaling";
    const std::string unit = o.metric_regex.empty() ? (by_samples ? "samples/s" : "steps/s") : "per s";
    r.notes.push_back(fmt::format(
        "each size trained {:g} s through baton launch, the first {:g} s not counted; "
        "throughput from {}; logs in {}",
        o.seconds, o.warmup_seconds,
        o.metric_regex.empty() ? "the Python hook's steps" : "--metric-regex " + o.metric_regex, o.work_dir));
    for (const std::string& n : notes) r.notes.push_back(n);
    const std::vector<ScalingRow> rows = scaling_rows(measured, o.alarm);
    Table t;
    t.title = fmt::format("weak scaling: efficiency = throughput / (ranks x the throughput of {} rank{} per rank)",
                          rows.front().ranks, rows.front().ranks == 1 ? "" : "s");
    t.keys = {"ranks", "throughput", "ideal", "efficiency", "flag"};
    t.headers = {"ranks", "throughput (" + unit + ")", "linear", "efficiency", "flag"};
    t.align = "rrrrl";
    for (const ScalingRow& row : rows) {
        std::string flag;
        if (row.slower)
            flag = "slower than a smaller size";
        else if (row.below_alarm)
            flag = fmt::format("below {:g}", o.alarm);
        t.rows.push_back({number_cell(row.ranks, std::to_string(row.ranks)),
                          number_cell(row.throughput, fmt::format("{:.1f}", row.throughput)),
                          number_cell(row.ideal, fmt::format("{:.1f}", row.ideal)),
                          number_cell(row.efficiency, fmt::format("{:.2f}", row.efficiency)), text_cell(flag)});
        LinkResult l;
        l.link = fmt::format("scaling {} ranks", row.ranks);
        l.unit = unit;
        l.measured = row.throughput;
        l.ok_share = o.alarm;
        if (&row != &rows.front()) {
            l.peak = row.ideal;
            l.peak_source =
                fmt::format("linear scaling from {} rank{}", rows.front().ranks, rows.front().ranks == 1 ? "" : "s");
            l.verdict = row.slower || row.below_alarm ? "degraded" : "ok";
            if (row.slower)
                l.detail = "adding GPUs made training slower: the collective or the input pipeline is the bottleneck";
            else if (row.below_alarm)
                l.detail = fmt::format("efficiency {:.2f} under [bench] scaling_alarm {:g}", row.efficiency, o.alarm);
        } else {
            l.peak_source = "the base of the efficiencies";
            l.verdict = "measured";
        }
        r.links.push_back(std::move(l));
    }
    r.tables.push_back(std::move(t));
    return r;
}

}  // namespace baton::measure
