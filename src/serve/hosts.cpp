#include "serve/hosts.hpp"

#include <set>
#include <thread>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/clock.hpp"
#include "core/printable.hpp"
#include "core/text_parse.hpp"
#include "serve/http_connection.hpp"
#include "formats/snapshot_json_read.hpp"

namespace baton::serve {

namespace {

bool host_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_';
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(s.begin());
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
    return s;
}

}  // namespace

HostSnapshot ask_host(HttpConnection& c, const HostAddress& h, const std::string& path, const std::string& token,
                      double timeout_seconds, double stale_seconds) {
    HostSnapshot out;
    out.host = h;
    const double started = monotonic_seconds();
    Result<HttpAnswer> a = c.get(path, token, timeout_seconds);
    out.seconds = monotonic_seconds() - started;
    if (!a.ok()) {
        out.state = HostState::down;
        // (the host is named beside it: the URL the message starts with would only repeat it)
        out.error = a.error().code == ErrorCode::timed_out
                        ? fmt::format("no full answer within {:g} s", timeout_seconds)
                        : a.error().message;
        return out;
    }
    if (a->status == 401 || a->status == 403) {
        out.state = HostState::unauthorized;
        out.error =
            "the agent wants a token (--token-file) and refused " + std::string(token.empty() ? "none" : "ours");
        return out;
    }
    if (a->status != 200) {
        out.state = HostState::bad_answer;
        out.error =
            "answered " + std::to_string(a->status) + ": " + printable(std::string_view(a->body).substr(0, 200));
        return out;
    }
    Result<Snapshot> parsed = formats::parse_snapshot_json(a->body);
    if (!parsed.ok()) {
        out.state = HostState::bad_answer;
        out.error = "its answer is not a baton snapshot: " + parsed.error().message;
        return out;
    }
    out.age_seconds = static_cast<double>(unix_millis() - parsed->time_unix_ms) / 1000;
    out.parsed = std::make_shared<const Snapshot>(std::move(*parsed));
    out.snapshot = std::move(a->body);
    out.state = out.age_seconds > stale_seconds ? HostState::stale : HostState::ok;
    if (out.state == HostState::stale)
        out.error = "its last sample is " + std::to_string(static_cast<long long>(out.age_seconds)) + " s old";
    return out;
}

const char* host_state_name(HostState s) {
    switch (s) {
        case HostState::ok:
            return "ok";
        case HostState::stale:
            return "stale";
        case HostState::down:
            return "down";
        case HostState::unauthorized:
            return "unauthorized";
        case HostState::bad_answer:
            return "bad_answer";
        case HostState::waiting:
            return "waiting";
    }
    return "?";
}

Result<std::vector<HostAddress>> parse_hosts(const std::string& list, int default_port) {
    std::vector<HostAddress> out;
    std::set<std::string> seen;
    std::size_t at = 0;
    while (at <= list.size()) {
        std::size_t end = list.find(',', at);
        if (end == std::string::npos) end = list.size();
        const std::string item = trimmed(list.substr(at, end - at));
        at = end + 1;
        const Error bad{"--hosts: '" + printable(std::string_view(item).substr(0, 100)) +
                            "' is not HOST[:PORT] (a name, an IPv4 address or [IPv6], a port 1 to 65535)",
                        ErrorCode::invalid_argument};
        if (item.empty()) {
            if (end == list.size() && !out.empty()) break;  // a trailing comma
            return bad;
        }
        std::string host, port_text;
        if (item.front() == '[') {
            const std::size_t close = item.find(']');
            if (close == std::string::npos || close == 1) return bad;
            host = item.substr(1, close - 1);
            for (char c : host)
                if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return bad;
            if (close + 1 < item.size()) {
                if (item[close + 1] != ':') return bad;
                port_text = item.substr(close + 2);
                if (port_text.empty()) return bad;
            }
            host = "[" + host + "]";
        } else {
            const std::size_t colon = item.find(':');
            host = item.substr(0, colon);
            if (colon != std::string::npos) {
                port_text = item.substr(colon + 1);
                if (port_text.empty()) return bad;
            }
            if (host.empty() || host.size() > 253) return bad;
            for (char c : host)
                if (!host_name_char(c)) return bad;
        }
        int port = default_port;
        if (!port_text.empty()) {
            const std::optional<int> given = text::parse_digits<int>(port_text);
            if (!given) return bad;
            port = *given;
        }
        if (port < 1 || port > 65535) return bad;
        HostAddress h{item, "http://" + host + ":" + std::to_string(port)};
        if (!seen.insert(h.url).second)
            return Error{"--hosts: '" + printable(item) + "' is named twice", ErrorCode::invalid_argument};
        if (out.size() == 256) return Error{"--hosts: at most 256 hosts", ErrorCode::invalid_argument};
        out.push_back(std::move(h));
        if (end == list.size()) break;
    }
    if (out.empty()) return Error{"--hosts: no host given", ErrorCode::invalid_argument};
    return out;
}

std::vector<HostSnapshot> fetch_snapshots(const std::vector<HostAddress>& hosts, const std::string& token,
                                          double timeout_seconds, double stale_seconds) {
    std::vector<HostSnapshot> out(hosts.size());
    std::vector<std::thread> threads;
    threads.reserve(hosts.size());
    for (std::size_t i = 0; i < hosts.size(); ++i)
        threads.emplace_back([&, i] {
            HttpConnection c(hosts[i].url);
            c.set_keep_alive(false);
            out[i] = ask_host(c, hosts[i], "/api/v1/snapshot", token, timeout_seconds, stale_seconds);
        });
    for (std::thread& t : threads) t.join();
    return out;
}

}  // namespace baton::serve
