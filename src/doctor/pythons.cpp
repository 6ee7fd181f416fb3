#include "doctor/pythons.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "doctor/facts.hpp"

namespace baton::doctor {

namespace {

// One JSON line; find_spec finds torch without importing it (an import can take seconds).
constexpr const char* kAsk = R"(import importlib.util, json, sys
print(json.dumps({"executable": sys.executable, "prefix": sys.prefix, "version": sys.version.split()[0],
                  "torch": importlib.util.find_spec("torch") is not None}))
)";

bool is_executable_file(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

}  // namespace

PythonFound find_python(const std::string& python, double timeout) {
    PythonFound p;
    p.command = python;
    const PythonAnswer a = run_python(python, kAsk, timeout);
    if (!a.error.empty()) {
        p.error = a.error;
        return p;
    }
    const std::size_t start = a.out.rfind('{');
    const nlohmann::json j =
        start == std::string::npos ? nlohmann::json() : nlohmann::json::parse(a.out.substr(start), nullptr, false);
    if (!j.is_object() || a.exit_status != 0) {
        p.error = python + " gave no usable answer";
        return p;
    }
    p.executable = j.value("executable", std::string());
    p.prefix = j.value("prefix", std::string());
    p.version = j.value("version", std::string());
    p.torch = j.value("torch", false);
    return p;
}

std::string python_words(const PythonFound& p) {
    if (p.executable.empty()) return p.command;
    std::string said = p.command;
    if (p.executable != p.command)
        said += " (" + p.executable + ", Python " + p.version + ")";
    else
        said += " (Python " + p.version + ")";
    return said;
}

std::vector<std::string> python_candidates(const std::map<std::string, std::string>& env, const std::string& cwd) {
    auto var = [&](const char* k) {
        auto it = env.find(k);
        return it == env.end() ? std::string() : it->second;
    };
    const std::string home = var("HOME");
    std::vector<std::string> out;
    auto add_file = [&](const std::string& path) {
        if (!path.empty() && path.front() == '/' && is_executable_file(path)) out.push_back(path);
    };
    if (!var("VIRTUAL_ENV").empty()) add_file(var("VIRTUAL_ENV") + "/bin/python");
    if (!var("CONDA_PREFIX").empty()) add_file(var("CONDA_PREFIX") + "/bin/python");
    out.push_back("python3");  // on PATH (run_python looks it up)
    out.push_back("python");
    if (!cwd.empty()) add_file(cwd + "/.venv/bin/python");
    if (!home.empty()) add_file(home + "/.venv/bin/python");
    add_file("/usr/bin/python3");
    add_file("/usr/local/bin/python3");
    for (const char* conda : {"/miniconda3/bin/python", "/anaconda3/bin/python", "/miniforge3/bin/python"})
        if (!home.empty()) add_file(home + conda);
    add_file("/opt/conda/bin/python");
    std::vector<std::string> once;
    for (const std::string& c : out)
        if (std::find(once.begin(), once.end(), c) == once.end()) once.push_back(c);
    return once;
}

std::vector<PythonFound> pythons_with_torch(const std::vector<std::string>& candidates,
                                            const std::string& except_prefix, double timeout) {
    std::vector<PythonFound> out;
    std::set<std::string> prefixes;
    if (!except_prefix.empty()) prefixes.insert(except_prefix);
    for (const std::string& c : candidates) {
        PythonFound p = find_python(c, timeout);
        if (!p.error.empty() || !p.torch || !prefixes.insert(p.prefix).second) continue;
        out.push_back(std::move(p));
    }
    return out;
}

std::vector<PythonFound> pythons_with_torch_here(const std::string& except_prefix, double timeout) {
    std::map<std::string, std::string> env;
    for (const char* k : {"HOME", "VIRTUAL_ENV", "CONDA_PREFIX"})
        if (const char* v = std::getenv(k)) env[k] = v;
    char here[4096];
    return pythons_with_torch(python_candidates(env, ::getcwd(here, sizeof here) ? here : ""), except_prefix, timeout);
}

std::string torch_elsewhere(const std::vector<PythonFound>& with_torch) {
    if (with_torch.empty())
        return "no Python found here has PyTorch: install it in the environment you train in (pip install torch, "
               "or Debian's python3-torch), or name one that has it with --python";
    std::string where;
    for (const PythonFound& p : with_torch) {
        if (!where.empty()) where += ", ";
        where += (p.command.find('/') != std::string::npos ? p.command : p.executable) + " (Python " + p.version + ")";
    }
    const PythonFound& first = with_torch.front();
    return "PyTorch is in " + where + ": give --python " +
           (first.command.find('/') != std::string::npos ? first.command : first.executable);
}

}  // namespace baton::doctor
