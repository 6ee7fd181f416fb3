// `baton diagnose`: judge the machine (live, or a recorded stream) and print findings.
#pragma once

#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct DiagnoseArgs {
    double duration = 30;  // seconds
    double interval = 1.0;
    bool json = false;
    std::string replay;
    bool no_gpus = false;
    std::string proc_root, sys_root;
};

CLI::App* add_diagnose_command(CLI::App& app, DiagnoseArgs& args);
int run_diagnose(const DiagnoseArgs& args, const std::string& config_path);

// Exit status of diagnose when it could not judge (bad flags, unreadable input): 3, the
// monitoring-plugin convention's UNKNOWN (0 OK, 1 warning, 2 critical).
inline constexpr int kExitCannotJudge = 3;

}  // namespace baton::cli
