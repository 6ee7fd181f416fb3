#include "ui/top_app.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <thread>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "core/thread_name.hpp"
#include "diagnose/indicators.hpp"
#include "sample/linux/pid_signal.hpp"
#include "sample/process_lookup.hpp"
#include "ui/terminal.hpp"
#include "ui/top_keys.hpp"
#include "ui/top_layout.hpp"

namespace baton::ui {

namespace {

// Samples on its own thread every `delay` seconds, keeps the newest snapshot and feeds the
// graphs' history (whether they are shown or not: G shows the past at once).
class Collector {
  public:
    Collector(SamplerOptions options, double delay, std::size_t history_samples)
        : options_(std::move(options)), delay_(delay), history_(history_samples) {
        ready_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        thread_ = std::thread([this] {
            name_this_thread("baton-sampler");
            loop();
        });
    }
    ~Collector() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        thread_.join();
        if (ready_fd_ >= 0) close(ready_fd_);
    }
    // Readable when a snapshot came that latest() has not taken: the UI sleeps in poll() on it and
    // on the keyboard, instead of waking on a timer to look. -1 if none could be made.
    int ready_fd() const { return ready_fd_; }
    // Empties ready_fd (latest() does; a paused screen, which takes nothing, calls it itself).
    void drain() {
        if (ready_fd_ < 0) return;
        std::uint64_t n = 0;
        [[maybe_unused]] ssize_t r = read(ready_fd_, &n, sizeof n);
    }
    Collector(const Collector&) = delete;
    Collector& operator=(const Collector&) = delete;

    // Copies the newest snapshot into `out`, and the history, when it is newer than `seen`.
    bool latest(std::uint64_t& seen, Snapshot& out, GraphHistory& history) {
        std::lock_guard<std::mutex> lock(mutex_);
        drain();
        if (generation_ == seen) return false;
        out = shared_;
        history = history_;
        seen = generation_;
        return true;
    }

  private:
    void loop() {
        // Created here, not in the UI thread: loading NVML can take seconds, and the screen
        // should be up (and q should work) meanwhile.
        Sampler sampler(options_);
        Snapshot snap;
        SampleSchedule schedule(delay_);
        for (;;) {
            sampler.take(snap);
            schedule.taken(monotonic_seconds());
            {
                std::unique_lock<std::mutex> lock(mutex_);
                shared_ = snap;
                history_.add(snap);
                ++generation_;
                if (ready_fd_ >= 0) {
                    const std::uint64_t one = 1;
                    [[maybe_unused]] ssize_t r = write(ready_fd_, &one, sizeof one);
                }
                const auto wait = std::chrono::duration<double>(std::max(0.0, schedule.next() - monotonic_seconds()));
                if (wake_.wait_for(lock, wait, [this] { return stop_; })) return;
            }
        }
    }

    SamplerOptions options_;
    double delay_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    Snapshot shared_;
    GraphHistory history_;
    std::uint64_t generation_ = 0;
    int ready_fd_ = -1;
    std::thread thread_;
};

SelfUsage self_usage(const Snapshot& s, bool from_proc) {
    SelfUsage u;
    if (!from_proc) return u;
    const auto me = static_cast<std::uint32_t>(getpid());
    if (const ProcessInfo* p = find_process(s, me)) {
        u.cpu_percent = p->cpu_percent;
        u.rss_bytes = p->rss_bytes;
    }
    return u;
}

// The process the user may act on (signal, renice): their own, or any as root; never when the
// rows come from another /proc (--proc-root: a container's, a copy), where the pid names another
// process than here. The error says why not, as the status line shows it.
Result<const ProcessInfo*> actionable(const Snapshot& s, std::uint32_t pid, bool local_proc, const char* what) {
    if (!local_proc)
        return make_error(ErrorCode::permission_denied,
                          "refused: the processes shown come from --proc-root, not this machine's /proc (pid " +
                              std::to_string(pid) + " here may be another process)");
    const ProcessInfo* p = find_process(s, pid);
    if (!p) return make_error(ErrorCode::not_found, "process " + std::to_string(pid) + " is gone");
    if (geteuid() != 0 && p->uid != geteuid())
        return make_error(ErrorCode::permission_denied, "refused: " + std::to_string(pid) + " belongs to " +
                                                            printable(p->user) + " (only root " + what +
                                                            " other users' processes)");
    return p;
}

std::string send_signal(const Snapshot& s, std::uint32_t pid, int sig, bool local_proc) {
    const char* name = sig == SIGKILL ? "SIGKILL" : "SIGTERM";
    const Result<const ProcessInfo*> found = actionable(s, pid, local_proc, "signals");
    if (!found.ok()) return found.error().message;
    const ProcessInfo* p = *found;
    // By pid and start time (a pidfd where the kernel has them): a pid reused since the screen was
    // drawn is another process, and is left alone.
    if (const int e = os::signal_process(static_cast<pid_t>(pid), p->start_ticks, sig); e != 0)
        return e == ESRCH ? "process " + std::to_string(pid) + " is gone (the pid names no process of this list now)"
                          : std::string(name) + " to " + std::to_string(pid) + " failed: " + std::strerror(e);
    return std::string("sent ") + name + " to " + std::to_string(pid) + " (" + printable(p->name) + ")";
}

// Sets the nice value of `pid` (its main thread's, as renice(1) does), with the same refusals.
std::string renice(const Snapshot& s, std::uint32_t pid, int nice, bool local_proc) {
    const Result<const ProcessInfo*> found = actionable(s, pid, local_proc, "renices");
    if (!found.ok()) return found.error().message;
    const ProcessInfo* p = *found;
    if (const int e = os::renice_process(static_cast<pid_t>(pid), p->start_ticks, nice); e != 0) {
        if (e == ESRCH)
            return "process " + std::to_string(pid) + " is gone (the pid names no process of this list now)";
        std::string why = std::strerror(e);
        if (e == EACCES) why += " (only root may lower a nice value)";
        return "renice " + std::to_string(pid) + " to " + std::to_string(nice) + " failed: " + why;
    }
    return "reniced " + std::to_string(pid) + " (" + printable(p->name) + ") to " + std::to_string(nice);
}

void terminal_size(int& w, int& h) {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        w = ws.ws_col;
        h = ws.ws_row;
    } else {
        w = 80;
        h = 24;
    }
}

// A frame shown before the first snapshot arrives.
Frame waiting_frame(int w, int h) {
    Frame f;
    f.width = w;
    f.height = h;
    Line l;
    l.add("baton top: taking the first snapshot...", Style::title);
    f.lines.push_back(std::move(l));
    return f;
}

}  // namespace

std::size_t history_capacity(const TopOptions& o) {
    return static_cast<std::size_t>(std::clamp(std::ceil(o.history_seconds / o.delay_seconds) + 1, 2.0, 100000.0));
}

void frame_size(const TopOptions& o, int& w, int& h) {
    terminal_size(w, h);
    if (o.width) w = o.width;
    if (o.height) h = o.height;
}

Result<int> run_top_interactive(const TopOptions& o) {
    auto opened = Terminal::open(o.color);
    if (!opened.ok()) return opened.error();
    std::unique_ptr<Terminal> term = std::move(*opened);
    restore_terminal_on_crash();
    catch_stop_signals();
    auto collector = std::make_unique<Collector>(o.sampler, o.delay_seconds, history_capacity(o));
    ViewState view = o.view;
    diagnose::IndicatorWindow window(o.thresholds);
    Snapshot shown;
    GraphHistory history(history_capacity(o));
    std::uint64_t seen = 0;
    LayoutResult last;
    TopInput input;
    input.thresholds = o.thresholds;
    bool dirty = true;
    // Without the collector's event fd, look for new snapshots this often; keys wake the loop at once.
    const int poll_ms = std::clamp(static_cast<int>(o.delay_seconds * 1000 / 2), 20, 100);
    bool keys_waiting = true;  // ncurses may hold keys it read already: ask it before sleeping
    while (!stop_signal()) {
        if (view.paused) collector->drain();
        if (!view.paused && collector->latest(seen, shown, history)) {
            window.add(shown);
            input.breaches = window.breaches();
            input.self = self_usage(shown, o.local_proc);
            input.snapshot = &shown;
            input.history = &history;
            dirty = true;
        }
        if (dirty) {
            const int w = o.width ? o.width : term->width();
            const int h = o.height ? o.height : term->height();
            if (input.snapshot) {
                last = layout_top(input, view, w, h);
                view.scroll = last.scroll;
                term->draw(last.frame);
            } else {
                term->draw(waiting_frame(w, h));
            }
            dirty = false;
        }
        std::optional<Key> key;
        if (collector->ready_fd() < 0) {
            key = term->read_key(poll_ms);
        } else {
            // Sleep until a key or a snapshot comes: one wake-up per snapshot instead of ten a
            // second. A signal (SIGWINCH, which ncurses turns into a resize key; a stop signal)
            // ends the poll early; the 1 s bound is only a safety net.
            if (!keys_waiting) {
                pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {collector->ready_fd(), POLLIN, 0}};
                poll(fds, 2, 1000);
            }
            key = term->read_key(0);
            keys_waiting = key.has_value();
        }
        if (!key) continue;
        dirty = true;
        KeyOutcome out = handle_key(*key, last, view);
        if (out.quit) break;
        if (out.signal && input.snapshot) view.message = send_signal(shown, out.pid, out.signal, o.local_proc);
        if (out.nice && input.snapshot) view.message = renice(shown, out.pid, *out.nice, o.local_proc);
    }
    // The terminal first: the sampling thread may be waiting out an NVML deadline, and the
    // user should get the shell back at once.
    term.reset();
    collector.reset();
    return stop_exit_status();
}

int run_top_batch(const TopOptions& options) {
    TopOptions o = options;
    o.view.show_selection = false;
    catch_stop_signals();
    int w = 0, h = 0;
    frame_size(o, w, h);
    Sampler sampler(o.sampler);
    diagnose::IndicatorWindow window(o.thresholds);
    Snapshot snap;
    GraphHistory history(history_capacity(o));
    TopInput input;
    input.thresholds = o.thresholds;
    input.history = &history;
    SampleSchedule schedule(o.delay_seconds);
    for (int i = 0; !stop_signal() && (o.count == 0 || i < o.count); ++i) {
        if (i > 0) {
            sleep_seconds(schedule.next() - monotonic_seconds());
            if (stop_signal()) break;
        }
        sampler.take(snap);
        schedule.taken(monotonic_seconds());
        window.add(snap);
        history.add(snap);
        input.snapshot = &snap;
        input.breaches = window.breaches();
        input.self = self_usage(snap, o.local_proc);
        std::string text = (i > 0 ? "\n" : "") + render_plain(layout_top(input, o.view, w, h).frame);
        if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) break;
    }
    return stop_exit_status();
}

std::string top_once(const TopOptions& options, bool marked) {
    TopOptions o = options;
    o.view.show_selection = false;
    int w = 0, h = 0;
    frame_size(o, w, h);
    Sampler sampler(o.sampler);
    Snapshot snap;
    sampler.take(snap);
    diagnose::IndicatorWindow window(o.thresholds);
    window.add(snap);
    TopInput input;
    input.snapshot = &snap;
    input.thresholds = o.thresholds;
    input.breaches = window.breaches();
    input.self = self_usage(snap, o.local_proc);
    const Frame f = layout_top(input, o.view, w, h).frame;
    return marked ? render_marked(f) : render_plain(f);
}

}  // namespace baton::ui
