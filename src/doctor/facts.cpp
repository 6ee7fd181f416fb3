#include "doctor/facts.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/config_keys.hpp"
#include "core/run_program.hpp"
#include "doctor/pythons.hpp"

namespace baton::doctor {

namespace {

// Printed as one JSON line; every attribute guarded, since old or CPU-only builds lack some.
constexpr const char* kProbe = R"(import json, sys
out = {"python": sys.version.split()[0], "executable": sys.executable}
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

}  // namespace

PythonAnswer run_python(const std::string& python, const std::string& code, double timeout) {
    PythonAnswer a;
    // A path that cannot be executed: say why (the child's errno is only in its stderr).
    if (python.find('/') != std::string::npos && access(python.c_str(), X_OK) != 0) {
        a.error = "cannot run " + python + ": " + std::strerror(errno);
        return a;
    }
    Result<ProgramOutput> r = run_program({python, "-c", code}, "", timeout);
    if (!r.ok()) {
        a.error = "cannot start " + python + ": " + r.error().message;
        return a;
    }
    a.ran = true;
    a.out = r->out.size() > (1u << 20) ? r->out.substr(0, 1u << 20) : std::move(r->out);
    a.timed_out = r->timed_out;
    a.exit_status = r->exit_status;
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
    t.executable = str("executable").value_or("");
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
    if (o.probe_torch) {
        f.torch = probe_torch(o.python, o.python_timeout_seconds);
        // No torch there (not a hang): where it is, so the fix can name an interpreter.
        if (!f.torch.torch_version && f.torch.error.find("did not answer") == std::string::npos) {
            const PythonFound asked = find_python(o.python, o.python_timeout_seconds);
            f.torch.elsewhere = torch_elsewhere(pythons_with_torch_here(asked.prefix, o.python_timeout_seconds));
        }
    }
    f.torch.asked = o.python_asked;
    return f;
}

ConfigFacts config_facts(const std::string& config_path, const Config& c) {
    ConfigFacts f;
    for (const std::string& file : config_files(config_path))
        if (std::error_code ec; std::filesystem::is_regular_file(file, ec)) f.files.push_back(file);
    f.changed = changed_config_keys(c);
    return f;
}

}  // namespace baton::doctor
