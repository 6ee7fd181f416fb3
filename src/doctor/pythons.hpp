// Which Python a command runs, and where PyTorch is on this machine: `baton doctor` names the
// interpreter it asked, `baton launch` checks it before any rank starts, and both suggest --python with
// an interpreter that does have torch. Asking an interpreter runs it once (find_spec: torch is found,
// not imported, so it costs tens of milliseconds).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace baton::doctor {

struct PythonFound {
    std::string command;     // as given: "python3" (looked up on PATH), "/opt/venv/bin/python"
    std::string executable;  // its sys.executable; "" when it could not be asked
    std::string prefix;      // its sys.prefix: a virtual environment's own, so one per environment
    std::string version;     // "3.11.7"
    bool torch = false;      // `import torch` would find a module
    std::string error;       // why it could not be asked ("python3 not found", ...)
};

PythonFound find_python(const std::string& python, double timeout);

// "python3 (/root/.pyenv/versions/3.11.7/bin/python3, Python 3.11.7)"; the command alone when it
// could not be asked.
std::string python_words(const PythonFound& p);

// The interpreters worth asking, in the order a user most likely means them: the active virtual and
// conda environments, python3 and python on PATH, a .venv here or in the home directory, the
// system's, conda's usual homes. `env` holds the environment's variables, `cwd` the directory.
std::vector<std::string> python_candidates(const std::map<std::string, std::string>& env, const std::string& cwd);

// The candidates that have torch, each environment once (by sys.prefix), the environment
// `except_prefix` left out.
std::vector<PythonFound> pythons_with_torch(const std::vector<std::string>& candidates,
                                            const std::string& except_prefix, double timeout);

// pythons_with_torch over this process's candidates (its HOME, VIRTUAL_ENV, CONDA_PREFIX, PATH and
// working directory).
std::vector<PythonFound> pythons_with_torch_here(const std::string& except_prefix, double timeout);

// What to do about it, in words: "PyTorch is in /usr/bin/python3 (Python 3.11.2): give --python
// /usr/bin/python3", or where none has it, how to install it.
std::string torch_elsewhere(const std::vector<PythonFound>& with_torch);

}  // namespace baton::doctor
