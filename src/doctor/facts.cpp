#include "doctor/facts.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace baton {

namespace {

// Printed as one JSON line; every attribute guarded, since old or CPU-only builds lack some.
constexpr const char* kProbe = R"(import json, sys
out = {"python": sys.version.split()[0]}
try:
    import torch
except Exception as e:
    out["error"] = "cannot import torch: %s: %s" % (type(e).__name__, e)
else:
    out["torch"] = str(torch.__version__)
    out["cuda"] = torch.version.cuda
    try:
        out["cuda_available"] = bool(torch.cuda.is_available())
        out["device_count"] = torch.cuda.device_count() if out["cuda_available"] else 0
    except Exception as e:
        out["cuda_available"] = False
    try:
        v = torch.backends.cudnn.version()
        out["cudnn"] = None if v is None else "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100) if v >= 10000 else "%d.%d.%d" % (v // 1000, v // 100 % 10, v % 100)
    except Exception:
        pass
    try:
        n = torch.cuda.nccl.version()
        out["nccl"] = ".".join(str(x) for x in n) if isinstance(n, tuple) else str(n)
    except Exception:
        pass
print(json.dumps(out))
)";

std::string read_all_with_deadline(int fd, pid_t pid, double timeout, bool& timed_out) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    char buf[4096];
    timed_out = false;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        pollfd p{fd, POLLIN, 0};
        const int r = poll(&p, 1, static_cast<int>(left.count()));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (out.size() < (1 << 20)) out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

}  // namespace

PythonAnswer run_python(const std::string& python, const std::string& code, double timeout) {
    PythonAnswer a;
    // A path that cannot be executed: say why (execlp's errno is lost in the child).
    if (python.find('/') != std::string::npos && access(python.c_str(), X_OK) != 0) {
        a.error = "cannot run " + python + ": " + std::strerror(errno);
        return a;
    }
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        a.error = "cannot create a pipe";
        return a;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        a.error = "cannot start " + python;
        close(pipefd[0]);
        close(pipefd[1]);
        return a;
    }
    if (pid == 0) {
        const int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(pipefd[1], 1);
        dup2(devnull, 2);
        execlp(python.c_str(), python.c_str(), "-c", code.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    close(pipefd[1]);
    a.out = read_all_with_deadline(pipefd[0], pid, timeout, a.timed_out);
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    a.ran = true;
    a.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (a.timed_out)
        a.error = python + " did not answer within " + std::to_string(static_cast<int>(timeout)) + " s";
    else if (a.exit_status == 127)
        a.error = python + " not found";
    return a;
}

TorchFacts probe_torch(const std::string& python, double timeout, std::string* answer) {
    TorchFacts t;
    t.python = python;
    const PythonAnswer a = run_python(python, kProbe, timeout);
    t.probed = a.ran || !a.error.empty();
    if (!a.error.empty()) {
        t.error = a.error;
    } else if (!parse_torch_probe(a.out, t)) {
        t.error = python + " gave no usable answer";
    } else if (answer) {
        *answer = a.out;
    }
    return t;
}

const std::vector<std::string>& doctor_env_names() {
    static const std::vector<std::string> names = {
        "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE", "NCCL_DEBUG",
        "NCCL_SOCKET_IFNAME", "CUDA_LAUNCH_BLOCKING",
        // Variables DCGM's software diagnostics flag: they change how CUDA runs every kernel.
        "NSIGHT_CUDA_DEBUGGER", "CUDA_INJECTION32_PATH", "CUDA_INJECTION64_PATH", "CUDA_AUTO_BOOST",
        "CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "CUDA_COREDUMP_FILE", "CUDA_DEVICE_WAITS_ON_EXCEPTION", "CUDA_PROFILE",
        "COMPUTE_PROFILE", "OPENCL_PROFILE"};
    return names;
}

bool parse_torch_probe(const std::string& text, TorchFacts& t) {
    const std::size_t start = text.rfind('{');
    if (start == std::string::npos) return false;
    nlohmann::json j = nlohmann::json::parse(text.substr(start), nullptr, false);
    if (!j.is_object()) return false;
    auto str = [&](const char* k) -> std::optional<std::string> {
        if (j.contains(k) && j[k].is_string()) return j[k].get<std::string>();
        return std::nullopt;
    };
    t.python_version = str("python");
    if (auto e = str("error")) t.error = *e;
    t.torch_version = str("torch");
    t.cuda_version = str("cuda");
    t.cudnn_version = str("cudnn");
    t.nccl_version = str("nccl");
    t.cuda_available =
        j.contains("cuda_available") && j["cuda_available"].is_boolean() && j["cuda_available"].get<bool>();
    if (j.contains("device_count") && j["device_count"].is_number_unsigned())
        t.device_count = j["device_count"].get<unsigned>();
    return t.python_version.has_value();
}

DoctorFacts gather_facts(const GatherOptions& o) {
    DoctorFacts f;
    // Limits first: the sampler raises this process's own open-file limit.
    rlimit rl{};
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) f.limits.memlock_bytes = rl.rlim_cur;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) f.limits.nofile = rl.rlim_cur;
    {
        Sampler sampler(o.sampler);
        sampler.take(f.snapshot);
    }
    for (const std::string& name : doctor_env_names())
        if (const char* v = std::getenv(name.c_str())) f.env[name] = v;
    if (o.probe_torch) f.torch = probe_torch(o.python, o.python_timeout_seconds);
    f.torch.asked = o.python_asked;
    return f;
}

}  // namespace baton
