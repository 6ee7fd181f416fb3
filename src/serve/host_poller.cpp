#include "serve/host_poller.hpp"

#include <algorithm>
#include <chrono>
#include <sys/eventfd.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/thread_name.hpp"
#include "serve/http_connection.hpp"

namespace baton::serve {

namespace {

void signal_fd(int fd) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(fd, &one, sizeof one);
}

void drain_fd(int fd) {
    std::uint64_t n = 0;
    [[maybe_unused]] ssize_t r = read(fd, &n, sizeof n);
}

}  // namespace

Result<std::vector<diagnose::Finding>> parse_findings_answer(const std::string& body) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("findings") || !j["findings"].is_array())
        return Error{"not an agent's findings (no \"findings\" list)", ErrorCode::failed};
    std::vector<diagnose::Finding> out;
    const auto text = [](const nlohmann::json& o, const char* key) {
        const auto it = o.find(key);
        return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    for (const nlohmann::json& item : j["findings"]) {
        if (!item.is_object()) return Error{"a finding is not an object", ErrorCode::failed};
        diagnose::Finding f;
        f.rule = text(item, "rule");
        f.subject = text(item, "subject");
        f.summary = text(item, "summary");
        f.job = text(item, "job");
        const std::string severity = text(item, "severity");
        f.severity = severity == "critical"  ? diagnose::Severity::critical
                     : severity == "warning" ? diagnose::Severity::warning
                                             : diagnose::Severity::info;
        if (f.rule.empty() || f.summary.empty()) return Error{"a finding has no rule or summary", ErrorCode::failed};
        out.push_back(std::move(f));
    }
    return out;
}

HostPoller::HostPoller(std::vector<HostAddress> hosts, std::vector<std::string> tokens, PollerOptions o)
    : tokens_(std::move(tokens)), options_(o) {
    tokens_.resize(hosts.size());
    readings_.resize(hosts.size());
    for (std::size_t i = 0; i < hosts.size(); ++i) readings_[i].host = std::move(hosts[i]);
    first_round_left_ = readings_.size();
    ready_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    threads_.reserve(readings_.size());
    for (std::size_t i = 0; i < readings_.size(); ++i) threads_.emplace_back([this, i] { loop(i); });
}

HostPoller::~HostPoller() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    if (stop_fd_ >= 0) signal_fd(stop_fd_);
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
    for (int fd : {ready_fd_, stop_fd_})
        if (fd >= 0) close(fd);
}

void HostPoller::loop(std::size_t i) {
    name_this_thread("baton-host");
    std::unique_lock<std::mutex> lock(mutex_);
    const HostAddress host = readings_[i].host;
    const std::string& token = tokens_[i];
    HttpConnection c(host.url);
    c.set_cancel_fd(stop_fd_);
    double findings_due = 0;
    bool first = true;
    while (!stop_) {
        const bool full = full_ == i;
        lock.unlock();
        const double started = monotonic_seconds();
        HostSnapshot got = ask_host(c, host, full ? "/api/v1/snapshot" : "/api/v1/snapshot?processes=gpu&cores=none",
                                    token, options_.timeout_seconds, options_.stale_seconds);
        std::shared_ptr<const Snapshot> snapshot = std::move(got.parsed);
        // The findings change slowly (each holds for a window of seconds): asked less often.
        std::optional<std::vector<diagnose::Finding>> findings;
        if (snapshot && started >= findings_due) {
            findings_due = started + options_.findings_every_seconds;
            Result<HttpAnswer> a = c.get("/api/v1/findings", token, options_.timeout_seconds);
            if (a.ok() && a->status == 200) {
                Result<std::vector<diagnose::Finding>> f = parse_findings_answer(a->body);
                if (f.ok()) findings = std::move(*f);
            }
        }
        lock.lock();
        if (stop_) break;
        HostReading& r = readings_[i];
        r.state = got.state;
        r.error = std::move(got.error);
        r.seconds = got.seconds;
        r.connections = c.connections_opened();
        if (snapshot) {
            r.snapshot = std::move(snapshot);
            r.full = full;
            r.answered_at = monotonic_seconds();
            ++r.snapshots;
        }
        if (findings) r.findings = std::move(*findings);
        if (first) {
            first = false;
            --first_round_left_;
            wake_.notify_all();
        }
        signal_fd(ready_fd_);
        const auto wait =
            std::chrono::duration<double>(std::max(0.0, started + options_.interval_seconds - monotonic_seconds()));
        wake_.wait_for(lock, wait, [&] { return stop_ || (full_ == i) != full; });
    }
}

std::vector<HostReading> HostPoller::readings() {
    std::lock_guard<std::mutex> lock(mutex_);
    drain_fd(ready_fd_);
    std::vector<HostReading> out = readings_;
    const double now = monotonic_seconds();
    const double patience = std::max(3 * options_.interval_seconds, 2.0);
    for (HostReading& r : out) {
        const double silent = now - r.answered_at;
        if (r.state == HostState::ok && silent > patience) {
            r.state = HostState::stale;
            r.error = "no answer for " + std::to_string(static_cast<long long>(silent)) + " s";
        }
    }
    return out;
}

void HostPoller::set_full(std::optional<std::size_t> host) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        full_ = host;
    }
    wake_.notify_all();
}

void HostPoller::wait_first_round(double seconds) {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return first_round_left_ == 0; });
}

}  // namespace baton::serve
