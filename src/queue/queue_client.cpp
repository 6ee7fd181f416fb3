#include "queue/queue_client.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "queue/queue_socket.hpp"

namespace baton::queue {

namespace {

std::string env_of(const std::map<std::string, std::string>& env, const char* key) {
    auto it = env.find(key);
    return it == env.end() ? "" : it->second;
}

}  // namespace

Result<std::string> own_socket_path(const std::map<std::string, std::string>& env) {
    if (const std::string s = env_of(env, "BATON_SOCKET"); !s.empty()) return s;
    if (::geteuid() == 0) return socket_places(env).front().path;
    const std::string xdg = env_of(env, "XDG_RUNTIME_DIR");
    if (!xdg.empty() && xdg.front() == '/') return xdg + "/baton/baton.sock";
    return make_error(
        "no XDG_RUNTIME_DIR (a login session sets it): set BATON_SOCKET=PATH to say where the agent's socket goes");
}

Result<int> connect_agent(const std::map<std::string, std::string>& env) {
    std::vector<std::string> places;
    if (const std::string s = env_of(env, "BATON_SOCKET"); !s.empty()) {
        places.push_back(s);
    } else {
        for (const SocketPlace& p : socket_places(env)) places.push_back(p.path);
    }
    std::string tried;
    std::optional<Error> refused;
    for (const std::string& p : places) {
        Result<int> fd = connect_unix(p);
        if (fd.ok()) return fd;
        // A socket that is somebody else's is worth saying; a missing one is the usual case.
        if (!fd.is(ErrorCode::unavailable)) refused = fd.error();
        tried += (tried.empty() ? "" : ", ") + p;
    }
    if (refused) return *refused;
    return make_error(ErrorCode::unavailable, "no baton agent answers (tried " + tried + ")");
}

Result<int> start_agent(const std::string& program, const std::vector<std::string>& extra_args,
                        const std::map<std::string, std::string>& env, const std::string& log_path, int& pid) {
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log < 0) return make_error("cannot open " + log_path + ": " + std::strerror(errno));
    std::vector<std::string> args{program, "serve", "--no-http"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid = ::fork();
    if (pid < 0) {
        ::close(log);
        return make_error(std::string("cannot fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        ::setsid();
        const int null = ::open("/dev/null", O_RDONLY);
        ::dup2(null, 0);
        ::dup2(log, 1);
        ::dup2(log, 2);
        // Not the caller's child for long: a second fork leaves it to init, so the shell never
        // waits for it and no zombie is left when baton submit exits.
        if (::fork() != 0) ::_exit(0);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    ::close(log);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = 0;
    const double until = monotonic_seconds() + 10;
    std::string last;
    while (monotonic_seconds() < until) {
        Result<int> fd = connect_agent(env);
        if (fd.ok()) {
            Result<Peer> p = peer_of(*fd);
            if (p.ok()) pid = p->pid;
            return fd;
        }
        last = fd.error().message;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return make_error("started a baton agent, but it did not answer within 10 s (" + last + "; its log: " + log_path +
                      ")");
}

Result<AgentConnection> connect_or_start_agent(const std::map<std::string, std::string>& env,
                                               const std::string& program, const std::vector<std::string>& extra_args,
                                               const std::function<std::string()>& log_of) {
    Result<int> fd = connect_agent(env);
    if (fd.ok()) return AgentConnection{*fd, std::nullopt};
    if (!fd.is(ErrorCode::unavailable)) return fd.error();
    Result<std::string> place = own_socket_path(env);
    if (!place.ok()) return make_error(fd.error().message + "; " + place.error().message);
    std::map<std::string, std::string> start_env = env;
    start_env["BATON_SOCKET"] = *place;
    std::vector<std::string> args{"--socket", *place};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    const std::string log_path = log_of();
    std::error_code ec;  // (a first use: the state directory may not be there yet)
    std::filesystem::create_directories(std::filesystem::path(log_path).parent_path(), ec);
    int pid = 0;
    Result<int> started = start_agent(program, args, start_env, log_path, pid);
    if (!started.ok()) return started.error();
    return AgentConnection{*started, StartedAgent{pid, *place, log_path}};
}

Result<nlohmann::json> parse_answer(const Reply& reply) {
    Result<nlohmann::json> j = parse_answer_line(reply.line);
    if (!j.ok()) return j;
    if (!reply.bytes.empty()) (*j)["data"] = reply.bytes;  // (logs: bytes, not necessarily UTF-8)
    return j;
}

Result<nlohmann::json> ask_agent(const std::map<std::string, std::string>& env, const Request& r,
                                 double timeout_seconds) {
    Result<int> fd = connect_agent(env);
    if (!fd.ok()) {
        Error e = fd.error();
        if (e.is(ErrorCode::unavailable)) e.message += "; baton serve starts one (baton submit does it for you)";
        return e;
    }
    Result<Reply> reply = call(*fd, r, timeout_seconds);
    ::close(*fd);
    if (!reply.ok()) return reply.error();
    return parse_answer(*reply);
}

Result<Reply> call(int fd, const Request& r, double timeout_seconds) {
    const std::string line = request_line(r);
    std::size_t at = 0;
    while (at < line.size()) {
        const ssize_t n = ::send(fd, line.data() + at, line.size() - at, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return make_error(ErrorCode::disconnected,
                              std::string("cannot send to the baton agent: ") + std::strerror(errno));
        at += static_cast<std::size_t>(n);
    }
    const double until = monotonic_seconds() + timeout_seconds;
    std::string in;
    Reply reply;
    std::optional<std::size_t> want;  // bytes after the line
    for (;;) {
        const std::size_t nl = in.find('\n');
        if (nl != std::string::npos && !want) {
            reply.line = in.substr(0, nl);
            in.erase(0, nl + 1);
            const nlohmann::json j = nlohmann::json::parse(reply.line, nullptr, false);
            if (!j.is_object()) return make_error("the baton agent answered something that is not JSON");
            want = j.contains("bytes") && j["bytes"].is_number_unsigned() ? j["bytes"].get<std::size_t>() : 0;
        }
        if (want && in.size() >= *want) {
            reply.bytes = in.substr(0, *want);
            return reply;
        }
        int wait_ms = -1;
        if (timeout_seconds >= 0) {
            const double left = until - monotonic_seconds();
            if (left <= 0)
                return make_error(ErrorCode::timed_out, "the baton agent did not answer within " +
                                                            std::to_string(static_cast<int>(timeout_seconds)) + " s");
            wait_ms = static_cast<int>(left * 1000) + 1;
        }
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        char buf[65536];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return make_error(ErrorCode::disconnected, "the baton agent closed the connection");
        in.append(buf, static_cast<std::size_t>(n));
    }
}

}  // namespace baton::queue
