#include "ui/hosts_app.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "diagnose/indicators.hpp"
#include "ui/graph_history.hpp"
#include "ui/hosts_keys.hpp"
#include "ui/hosts_layout.hpp"
#include "ui/terminal.hpp"
#include "ui/top_layout.hpp"

namespace baton::ui {

namespace {

// What the screen keeps of each host between its readings: the graphs' past and the indicator
// window of its full view, fed with every new snapshot (so Enter shows the past at once).
struct HostPast {
    explicit HostPast(const TopOptions& o) : history(history_capacity(o)), window(o.thresholds) {}
    std::uint64_t seen = 0;
    GraphHistory history;
    diagnose::IndicatorWindow window;
};

class HostsScreen {
  public:
    HostsScreen(const HostsOptions& o, HostsSource& source) : o_(o), source_(source), view_(o.view), top_(o.top.view) {}

    // Takes the source's readings and feeds each host's past with its new snapshots.
    void refresh() {
        hosts_ = source_.views();
        for (const HostView& h : hosts_) {
            if (!h.snapshot) continue;
            auto it = past_.find(h.name);
            if (it == past_.end()) it = past_.emplace(h.name, HostPast(o_.top)).first;
            if (it->second.seen == h.snapshots) continue;
            it->second.seen = h.snapshots;
            it->second.history.add(*h.snapshot);
            it->second.window.add(*h.snapshot);
        }
    }

    Frame draw(int w, int h) {
        if (const HostView* host = opened()) {
            HostPast& past = past_.at(host->name);
            // p (pause) keeps the picture: the snapshot shown when it was pressed.
            if (!top_.paused || !shown_) shown_ = host->snapshot;
            TopInput in;
            in.snapshot = shown_.get();
            in.thresholds = o_.top.thresholds;
            in.breaches = past.window.breaches();
            in.history = &past.history;
            in.origin = origin(*host);
            in.origin_style = host->status == HostStatus::ok ? Style::dim : Style::alarm;
            last_top_ = layout_top(in, top_, w, h);
            top_.scroll = last_top_.scroll;
            return last_top_.frame;
        }
        last_hosts_ = layout_hosts(hosts_, o_.top.thresholds, view_, w, h);
        view_.scroll = last_hosts_.scroll;
        return last_hosts_.frame;
    }

    // Returns false to quit.
    bool key(const Key& k) {
        if (const HostView* host = opened()) {
            const bool back = top_.prompt == Prompt::none && !top_.help &&
                              (k.code == KeyCode::escape || k.code == KeyCode::backspace);
            if (back) {
                open("");
                return true;
            }
            const KeyOutcome out = handle_key(k, last_top_, top_);
            if (out.signal || out.nice)
                top_.message = "k and r act on this machine's processes; these run on " + printable(host->name);
            return !out.quit;
        }
        const HostsKeyOutcome out = handle_hosts_key(k, last_hosts_, view_);
        if (!out.open.empty()) open(out.open);
        return !out.quit;
    }

  private:
    // The host whose full view is open, while it has a snapshot to show.
    const HostView* opened() const {
        if (opened_.empty()) return nullptr;
        for (const HostView& h : hosts_)
            if (h.name == opened_ && h.snapshot && past_.count(h.name)) return &h;
        return nullptr;
    }

    void open(const std::string& name) {
        opened_ = name;
        shown_.reset();
        top_ = o_.top.view;
        if (!name.empty() && !opened()) {
            view_.message = printable(name) + " has no snapshot to show yet";
            opened_.clear();
        }
        source_.open(opened_);
    }

    static std::string origin(const HostView& h) {
        std::string s = "via " + printable(h.name) + ", " + host_status_name(h.status);
        if (!h.error.empty()) s += ": " + printable(h.error);
        if (!h.full_processes) s += " (processes on a GPU; the rest come next)";
        return s + "  Esc: all hosts";
    }

    const HostsOptions& o_;
    HostsSource& source_;
    HostsViewState view_;
    ViewState top_;
    std::vector<HostView> hosts_;
    std::map<std::string, HostPast> past_;
    std::string opened_;
    std::shared_ptr<const Snapshot> shown_;  // the snapshot the full view shows
    HostsLayoutResult last_hosts_;
    LayoutResult last_top_;
};

}  // namespace

Result<int> run_hosts_interactive(const HostsOptions& o, HostsSource& source) {
    auto opened = Terminal::open(o.top.color);
    if (!opened.ok()) return opened.error();
    std::unique_ptr<Terminal> term = std::move(*opened);
    restore_terminal_on_crash();
    catch_stop_signals();
    HostsScreen screen(o, source);
    bool dirty = true;
    bool keys_waiting = true;  // ncurses may hold keys it read already: ask it before sleeping
    // The hosts answer one by one, each on its own thread: their news is gathered for a moment and
    // drawn once, not once per host (ten redraws a second for ten hosts would be most of the cost).
    // Without news, once a second (a host's silence turns it stale).
    const double gather = std::min(0.1, o.top.delay_seconds / 4);
    double next_tick = 0, last_refresh = -1;
    bool news = false;  // a refresh is set for the news that came (the fd stays readable until then)
    while (!stop_signal()) {
        const double now = monotonic_seconds();
        if (now >= next_tick) {
            screen.refresh();
            last_refresh = now;
            next_tick = now + 1;
            news = false;
            dirty = true;
        }
        if (dirty) {
            const int w = o.top.width ? o.top.width : term->width();
            const int h = o.top.height ? o.top.height : term->height();
            term->draw(screen.draw(w, h));
            dirty = false;
        }
        if (!keys_waiting) {
            const bool listen = source.ready_fd() >= 0 && !news;
            pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {source.ready_fd(), POLLIN, 0}};
            const int wait = std::clamp(static_cast<int>((next_tick - monotonic_seconds()) * 1000) + 1, 1, 1000);
            if (poll(fds, listen ? 2 : 1, wait) > 0 && listen && (fds[1].revents & POLLIN)) {
                news = true;
                next_tick =
                    std::min(next_tick, std::max(monotonic_seconds() + gather, last_refresh + o.top.delay_seconds / 2));
            }
        }
        const std::optional<Key> key = term->read_key(0);
        keys_waiting = key.has_value();
        if (!key) continue;
        dirty = true;
        if (!screen.key(*key)) break;
    }
    term.reset();  // the shell back first; the caller then stops the pollers
    return stop_exit_status();
}

int run_hosts_batch(const HostsOptions& options, HostsSource& source) {
    HostsOptions o = options;
    o.view.show_selection = false;
    catch_stop_signals();
    int w = 0, h = 0;
    frame_size(o.top, w, h);
    source.wait_first_round(o.first_round_seconds);
    SampleSchedule schedule(o.top.delay_seconds);
    for (int i = 0; !stop_signal() && (o.top.count == 0 || i < o.top.count); ++i) {
        if (i > 0) {
            sleep_seconds(schedule.next() - monotonic_seconds());
            if (stop_signal()) break;
        }
        schedule.taken(monotonic_seconds());
        const std::string text =
            (i > 0 ? "\n" : "") + render_plain(layout_hosts(source.views(), o.top.thresholds, o.view, w, h).frame);
        if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) break;
    }
    return stop_exit_status();
}

std::string hosts_once(const HostsOptions& options, HostsSource& source, bool marked) {
    HostsViewState v = options.view;
    v.show_selection = false;
    int w = 0, h = 0;
    frame_size(options.top, w, h);
    source.wait_first_round(options.first_round_seconds);
    const Frame f = layout_hosts(source.views(), options.top.thresholds, v, w, h).frame;
    return marked ? render_marked(f) : render_plain(f);
}

}  // namespace baton::ui
