// `baton profile FILE.json[.gz]`: a PyTorch profiler trace judged (issue 33, docs/profile.md):
// where each millisecond of a step went, on each GPU and on the host, where the host waited for the
// GPU and at which line, the top kernels and operators, and the findings with their fixes. Any
// trace a user recorded (torch.profiler's export_chrome_trace, tensorboard_trace_handler) will do.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace baton::cli {

struct ProfileArgs {
    std::string file;
    bool json = false;
    std::size_t top = 10;
    double min_share = -1;  // --min-share; -1: [profile] min_share
};

CLI::App* add_profile_command(CLI::App& app, ProfileArgs& args);
int run_profile(const ProfileArgs& args, const std::string& config_path);

}  // namespace baton::cli
