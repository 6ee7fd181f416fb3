// baton's configuration: one TOML file, every key optional, command-line flags win.
//
// Looked up at $BATON_CONFIG, else $XDG_CONFIG_HOME/baton/config.toml, else
// ~/.config/baton/config.toml; a missing file is not an error, a malformed one is.
// Keys are documented in docs/cli.md ("Configuration").
#pragma once

#include <string>

#include "core/result.hpp"
#include "core/thresholds.hpp"

namespace baton {

struct Config {
    // [sample]
    std::string proc_root = "/proc";
    std::string sys_root = "/sys";
    // Where /dev/shm is, for its size and use (statvfs).
    std::string shm_path = "/dev/shm";
    // Skip the stat read of processes that provably did not run (ProcessTable). Off: every
    // process's stat is read every tick (for comparison, or a kernel that misreports).
    bool skip_idle_processes = true;
    // [gpu]
    // Empty: $BATON_NVML_LIBRARY, else "libnvidia-ml.so.1" from the loader's search path.
    std::string nvml_library;
    // Deadline for each NVML call, in milliseconds.
    int nvml_deadline_ms = 2000;
    // PCIe throughput is slow to read: at most once per this many seconds.
    double pcie_interval_seconds = 5.0;
    // [thresholds]
    Thresholds thresholds;
};

// The path load_config() reads when given none: see the header comment.
std::string default_config_path();

// Reads `path` (or default_config_path() when empty) over the defaults. A missing file at
// the default path gives the defaults; a missing file named explicitly is an error.
Result<Config> load_config(const std::string& path);

// Parses TOML text; `origin` names it in error messages.
Result<Config> parse_config(const std::string& text, const std::string& origin);

}  // namespace baton
