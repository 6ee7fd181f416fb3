#include "core/run_program.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>

#include "core/clock.hpp"

namespace baton {

Result<ProgramOutput> run_program(const std::vector<std::string>& argv, const std::string& input,
                                  double timeout_seconds) {
    if (argv.empty()) return make_error("no program");
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return make_error(std::string("cannot make a pipe: ") + std::strerror(errno));
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
        ::close(in[0]);
        ::close(in[1]);
        return make_error(std::string("cannot make a pipe: ") + std::strerror(errno));
    }
    std::vector<std::string> words = argv;
    std::vector<char*> args;
    for (std::string& w : words) args.push_back(w.data());
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(in[0], 0);
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        ::signal(SIGPIPE, SIG_DFL);
        ::execvp(args[0], args.data());
        const std::string why = "cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
        (void)!::write(2, why.data(), why.size());
        ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    if (pid < 0) {
        for (int fd : {in[1], out[0], err[0]}) ::close(fd);
        return make_error(std::string("cannot fork: ") + std::strerror(errno));
    }
    // A program that exits without reading its input must not end this process with SIGPIPE.
    struct sigaction ignore {
    }, before{};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &before);
    ProgramOutput r;
    std::size_t written = 0;
    int to = in[1];
    if (input.empty()) {
        ::close(to);
        to = -1;
    } else {
        ::fcntl(to, F_SETFL, O_NONBLOCK);
    }
    int from[2] = {out[0], err[0]};
    const double deadline = monotonic_seconds() + timeout_seconds;
    while (from[0] >= 0 || from[1] >= 0) {
        const double left = deadline - monotonic_seconds();
        if (left <= 0) {
            r.timed_out = true;
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd p[3];
        nfds_t n = 0;
        for (int fd : from)
            if (fd >= 0) p[n++] = {fd, POLLIN, 0};
        if (to >= 0) p[n++] = {to, POLLOUT, 0};
        if (::poll(p, n, static_cast<int>(std::min(left, 1.0) * 1000) + 1) < 0 && errno != EINTR) break;
        for (nfds_t i = 0; i < n; ++i) {
            if (!p[i].revents) continue;
            if (p[i].fd == to) {
                const ssize_t w = ::write(to, input.data() + written, input.size() - written);
                if (w > 0) written += static_cast<std::size_t>(w);
                if (w < 0 && errno != EAGAIN) written = input.size();  // it stopped reading
                if (written == input.size()) {
                    ::close(to);
                    to = -1;
                }
                continue;
            }
            char buf[8192];
            const ssize_t got = ::read(p[i].fd, buf, sizeof buf);
            const int which = p[i].fd == from[0] ? 0 : 1;
            if (got > 0) {
                (which == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(got));
                if (r.out.size() + r.err.size() > (64u << 20)) {  // (an answer this long is not Slurm's)
                    r.timed_out = true;
                    ::kill(pid, SIGKILL);
                    for (int& fd : from)
                        if (fd >= 0) ::close(std::exchange(fd, -1));
                    break;
                }
            } else if (got == 0 || errno != EINTR) {
                ::close(from[which]);
                from[which] = -1;
            }
        }
    }
    for (int fd : {to, from[0], from[1]})
        if (fd >= 0) ::close(fd);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::sigaction(SIGPIPE, &before, nullptr);
    r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

}  // namespace baton
