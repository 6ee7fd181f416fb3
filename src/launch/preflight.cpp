#include "launch/preflight.hpp"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/files.hpp"
#include "doctor/checks.hpp"
#include "launch/rank_output.hpp"

namespace baton::launch {

namespace {

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "none" : out;
}

// One *_SOCKET_IFNAME variable: the interfaces it names must exist and one must be up.
void check_ifname(const char* var, const std::optional<std::string>& value, const std::vector<InterfaceState>& ifs,
                  std::vector<PreflightNote>& out) {
    if (!value || value->empty()) return;
    std::vector<std::string> names, up;
    for (const InterfaceState& i : ifs) names.push_back(i.name);
    const std::vector<std::string> named = doctor::nccl_socket_interfaces(*value, names);
    for (const InterfaceState& i : ifs)
        if (i.up && std::find(named.begin(), named.end(), i.name) != named.end()) up.push_back(i.name);
    if (named.empty())
        out.push_back({true, std::string(var) + "=" + *value +
                                 " names no interface of this machine (it has: " + joined(names) + ")"});
    else if (up.empty())
        out.push_back(
            {true, std::string(var) + "=" + *value + " names only interfaces that are down (" + joined(named) + ")"});
}

Status bind_any(int family, int port) {
    const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Ok{};  // no such family here (IPv6 off): nothing to collide with
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // as TCPStore: TIME_WAIT is no obstacle
    int r;
    if (family == AF_INET6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_addr = in6addr_any;
        a.sin6_port = htons(static_cast<std::uint16_t>(port));
        r = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        r = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    const int e = errno;
    close(fd);
    if (r == 0 || (family == AF_INET6 && e == EADDRNOTAVAIL)) return Ok{};
    return make_error(std::strerror(e));
}

}  // namespace

std::vector<InterfaceState> read_interfaces(const std::string& dir) {
    std::vector<InterfaceState> out;
    DIR* d = opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        InterfaceState i;
        i.name = e->d_name;
        const std::string state = file_value(dir + "/" + i.name + "/operstate");
        i.up = state == "up" || state == "unknown";
        out.push_back(std::move(i));
    }
    closedir(d);
    std::sort(out.begin(), out.end(), [](const InterfaceState& a, const InterfaceState& b) { return a.name < b.name; });
    return out;
}

std::vector<PreflightNote> check_launch_environment(const EnvLookup& env, const std::vector<InterfaceState>& ifs) {
    std::vector<PreflightNote> out;
    check_ifname("NCCL_SOCKET_IFNAME", env("NCCL_SOCKET_IFNAME"), ifs, out);
    // gloo takes exact names, comma-separated.
    if (const std::optional<std::string> g = env("GLOO_SOCKET_IFNAME"))
        check_ifname("GLOO_SOCKET_IFNAME", "=" + *g, ifs, out);
    struct Switch {
        const char* name;
        const char* why;
    };
    for (const Switch& s : {Switch{"NCCL_P2P_DISABLE", "GPU peer-to-peer is off: all-reduce goes through host memory"},
                            Switch{"NCCL_IB_DISABLE", "InfiniBand is off: multi-node traffic goes over TCP"},
                            Switch{"CUDA_LAUNCH_BLOCKING", "every CUDA kernel launch waits for the GPU"}}) {
        const std::optional<std::string> v = env(s.name);
        if (v && !v->empty() && *v != "0")
            out.push_back({false, std::string(s.name) + "=" + *v + " is set (" + s.why +
                                      "): a debugging switch left on? unset it for training runs"});
    }
    return out;
}

std::vector<std::string> visible_gpus(const EnvLookup& env, const Snapshot& machine) {
    std::vector<std::string> out;
    if (const std::optional<std::string> v = env("CUDA_VISIBLE_DEVICES")) {
        std::size_t start = 0;
        while (start <= v->size()) {
            std::size_t comma = v->find(',', start);
            if (comma == std::string::npos) comma = v->size();
            std::string e = v->substr(start, comma - start);
            e.erase(0, e.find_first_not_of(' '));
            e.erase(e.find_last_not_of(' ') + 1);
            // CUDA stops at the first entry it cannot parse (-1, a typo): so does the list here.
            const bool index = !e.empty() && e.find_first_not_of("0123456789") == std::string::npos;
            if (!index && e.rfind("GPU-", 0) != 0 && e.rfind("MIG-", 0) != 0) break;
            out.push_back(e);
            start = comma + 1;
        }
        return out;
    }
    for (const GpuInfo& g : machine.gpus) out.push_back(std::to_string(g.index));
    return out;
}

std::vector<PreflightNote> check_torch_against_driver(const Snapshot& machine, const doctor::TorchFacts& torch,
                                                      int local_ranks) {
    std::vector<PreflightNote> out;
    doctor::DoctorFacts f;
    f.snapshot = machine;
    f.torch = torch;
    for (const doctor::CheckItem& c : run_checks(f)) {
        if (c.id == "cuda_driver" && c.status == doctor::CheckStatus::fail)
            out.push_back({true, "PyTorch and the driver: " + c.detail + ". " + c.fix});
        if (c.id == "nccl" && c.status != doctor::CheckStatus::pass && torch.torch_version && local_ranks > 1 &&
            !machine.gpus.empty())
            out.push_back({false, "NCCL: " + c.detail + " (ranks on GPUs will need another backend, such as gloo)"});
    }
    return out;
}

std::vector<PreflightNote> check_python(const doctor::PythonFound& asked,
                                        const std::vector<doctor::PythonFound>& with_torch) {
    if (!asked.error.empty()) return {{true, asked.error + " (--python names the interpreter that runs the script)"}};
    if (asked.torch) return {};
    return {{true, doctor::python_words(asked) +
                       " cannot import torch: every rank would stop at `import torch` (ModuleNotFoundError). " +
                       doctor::torch_elsewhere(with_torch) + " (a script that needs no PyTorch runs with --no-python " +
                       asked.command + " SCRIPT)"}};
}

std::string default_cache_dir() {
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/baton";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/baton";
    return "";
}

doctor::TorchFacts cached_torch_probe(const std::string& python, const std::string& driver_version,
                                      const std::string& cache_dir, double timeout) {
    doctor::TorchFacts none;
    none.python = python;
    none.probed = true;
    const doctor::PythonAnswer where = doctor::run_python(
        python, "import importlib.util as u\ns = u.find_spec('torch')\nprint(s.origin if s and s.origin else '')",
        timeout);
    std::string origin = where.out;
    while (!origin.empty() && (origin.back() == '\n' || origin.back() == ' ')) origin.pop_back();
    if (!where.error.empty() || where.exit_status != 0 || origin.empty()) {
        none.error = where.error.empty() ? "no torch module" : where.error;
        return none;
    }
    const std::string version_file = origin.substr(0, origin.rfind('/') + 1) + "version.py";
    struct stat st {};
    if (cache_dir.empty() || stat(version_file.c_str(), &st) != 0) return doctor::probe_torch(python, timeout);
    const std::string key = fmt::format("v1|{}|{}|{}.{}|{}|{}", python, origin, st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                                        st.st_size, driver_version);
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: a file name per key
    for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
    const std::string path = fmt::format("{}/torch-probe-{:016x}.json", cache_dir, h);
    if (FILE* f = std::fopen(path.c_str(), "r")) {
        std::string text;
        char buf[4096];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() < (1 << 16)) text.append(buf, n);
        std::fclose(f);
        const std::size_t nl = text.find('\n');
        doctor::TorchFacts t;
        t.python = python;
        t.probed = true;
        if (nl != std::string::npos && text.substr(0, nl) == key && doctor::parse_torch_probe(text.substr(nl + 1), t))
            return t;
    }
    std::string answer;
    doctor::TorchFacts t = doctor::probe_torch(python, timeout, &answer);
    if (!answer.empty() && make_directories(cache_dir).ok()) {
        // Written whole under a temporary name, then renamed: a reader never sees half an answer.
        const std::string tmp = path + "." + std::to_string(getpid());
        if (FILE* f = std::fopen(tmp.c_str(), "w")) {
            const std::string text = key + "\n" + answer;
            const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
            if (std::fclose(f) == 0 && ok) std::rename(tmp.c_str(), path.c_str());
            std::remove(tmp.c_str());
        }
    }
    return t;
}

Status check_port_free(int port) {
    for (int family : {AF_INET, AF_INET6}) {
        const Status s = bind_any(family, port);
        if (!s.ok())
            return make_error(
                "the master port " + std::to_string(port) + " is in use (" + s.error().message +
                "): name another with --master-port, or leave it out on one node (baton picks a free one)");
    }
    return Ok{};
}

Result<int> pick_free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        const int e = errno;
        close(fd);
        return make_error(std::string("cannot find a free port: ") + std::strerror(e));
    }
    close(fd);
    return static_cast<int>(ntohs(a.sin_port));
}

}  // namespace baton::launch
