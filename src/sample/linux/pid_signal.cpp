#include "sample/linux/pid_signal.hpp"

#include <cerrno>
#include <csignal>
#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sample/linux/kept_file.hpp"
#include "sample/linux/proc_pid_stat.hpp"

namespace baton::os {

namespace {

int send_through(int pidfd, int sig) {
#ifdef SYS_pidfd_send_signal
    return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
#else
    (void)pidfd;
    (void)sig;
    errno = ENOSYS;
    return -1;
#endif
}

// A pidfd is readable once its process has ended.
bool ended(int pidfd) {
    pollfd p{pidfd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
}

class Pidfd {
  public:
    explicit Pidfd(pid_t pid) : fd_(open_pidfd(pid)) {}
    ~Pidfd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Pidfd(const Pidfd&) = delete;
    Pidfd& operator=(const Pidfd&) = delete;
    int fd() const { return fd_; }

  private:
    int fd_;
};

}  // namespace

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

std::uint64_t process_start_ticks(pid_t pid, const std::string& proc_root) {
    ReadBuffer buf;
    PidStat st;
    if (pid <= 0 || !read_file(proc_root + "/" + std::to_string(pid) + "/stat", buf) ||
        !parse_pid_stat(buf.view(), st) || st.state == 'Z')
        return 0;
    return st.starttime;
}

int signal_process(pid_t pid, std::uint64_t start_ticks, int sig, const std::string& proc_root) {
    if (pid <= 0) return ESRCH;
    const Pidfd pidfd(pid);
    if (pidfd.fd() < 0 && errno == ESRCH) return ESRCH;
    if (process_start_ticks(pid, proc_root) != start_ticks) return ESRCH;
    if (pidfd.fd() >= 0) {
        if (send_through(pidfd.fd(), sig) == 0) return 0;
        if (errno != ENOSYS) return errno;
    }
    return ::kill(pid, sig) == 0 ? 0 : errno;
}

int renice_process(pid_t pid, std::uint64_t start_ticks, int nice, const std::string& proc_root) {
    if (pid <= 0) return ESRCH;
    const Pidfd pidfd(pid);
    if (pidfd.fd() < 0 && errno == ESRCH) return ESRCH;
    if (process_start_ticks(pid, proc_root) != start_ticks) return ESRCH;
    if (::setpriority(PRIO_PROCESS, static_cast<id_t>(pid), nice) != 0) return errno;
    // Still the same process afterwards: the pid named it when setpriority ran (a pid is not
    // given out again while its process has not ended).
    if (pidfd.fd() >= 0 && ended(pidfd.fd())) return ESRCH;
    return 0;
}

}  // namespace baton::os
