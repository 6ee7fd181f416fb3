// `baton compare RUN_A RUN_B`: two recorded runs side by side, with the differences.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct CompareArgs {
    std::string db;
    std::string a, b;  // run ids as typed
    bool json = false;
};

CLI::App* add_compare_command(CLI::App& app, CompareArgs& args);
int run_compare(const CompareArgs& args, const std::string& config_path);

}  // namespace baton::cli
