#include "cli/cli_common.hpp"

#include <cerrno>
#include <cstdio>
#include <unistd.h>

#include "store/history.hpp"

namespace baton::cli {

int usage_error(const std::string& message) {
    std::fprintf(stderr, "baton: error: %s\n", message.c_str());
    return kExitUsage;
}

int runtime_error(const std::string& message) {
    std::fprintf(stderr, "baton: %s\n", message.c_str());
    return kExitFailure;
}

bool write_stdout(const std::string& text) {
    std::size_t off = 0;
    while (off < text.size()) {
        ssize_t n = ::write(STDOUT_FILENO, text.data() + off, text.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        off += static_cast<std::size_t>(n);
    }
    return true;
}

SamplerOptions sampler_options(const Config& c, const std::string& proc_root, const std::string& sys_root,
                               bool no_gpus) {
    SamplerOptions o = SamplerOptions::from_config(c);
    if (!proc_root.empty()) o.proc_root = proc_root;
    if (!sys_root.empty()) o.sys_root = sys_root;
    o.gpus = !no_gpus;
    return o;
}

Result<std::string> history_path(const std::string& db_flag, const std::string& config_path) {
    if (!db_flag.empty()) return db_flag;
    Result<Config> c = load_config(config_path);
    if (!c.ok()) return c.error();
    return c->history_db.empty() ? History::default_path() : c->history_db;
}

Result<History> open_history(const std::string& db_flag, const std::string& config_path) {
    Result<std::string> path = history_path(db_flag, config_path);
    if (!path.ok()) return path.error();
    return History::open(*path, /*create=*/false);
}

}  // namespace baton::cli
