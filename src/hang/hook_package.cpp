#include "hang/hook_package.hpp"

#include <cerrno>
#include <sys/stat.h>

#include "core/files.hpp"

namespace baton {
// Generated from python/baton/*.py (src/hang/CMakeLists.txt).
std::string_view hook_py__init__();
std::string_view hook_py__main__();
std::string_view hook_py_auto();
std::string_view hook_py_binary();
std::string_view hook_py_events();
std::string_view hook_py_memory();
std::string_view hook_py_profile();
std::string_view hook_py_tune();
std::string_view hook_pychecks();
std::string_view hook_pytorch();
std::string_view hook_pytuners();
}  // namespace baton

namespace baton::hang {

const std::vector<HookModule>& hook_modules() {
    static const std::vector<HookModule> modules = {
        {"__init__", hook_py__init__()}, {"__main__", hook_py__main__()}, {"_auto", hook_py_auto()},
        {"_binary", hook_py_binary()},   {"_events", hook_py_events()},   {"_memory", hook_py_memory()},
        {"_profile", hook_py_profile()}, {"_tune", hook_py_tune()},       {"checks", hook_pychecks()},
        {"torch", hook_pytorch()},       {"tuners", hook_pytuners()}};
    return modules;
}

Status write_hook_package(const std::string& dir, unsigned mode) {
    const std::string package = dir + "/baton";
    if (::mkdir(package.c_str(), mode) != 0) {
        if (errno != EEXIST) return os_error("cannot create " + package, errno);
        if (::chmod(package.c_str(), mode) != 0) return os_error("cannot set the mode of " + package, errno);
    }
    for (const HookModule& m : hook_modules()) {
        const std::string path = package + "/" + std::string(m.name) + ".py";
        if (Status s = write_file_atomically(path, std::string(m.text)); !s.ok()) return s;
        ::chmod(path.c_str(), 0644);
    }
    return Ok{};
}

}  // namespace baton::hang
