// `baton profile FILE.json[.gz]` and `baton profile show RUN`: a PyTorch profiler trace judged (issue
// 33, docs/profile.md), a file or the window `baton run --profile` kept with a run:
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
    std::string file;  // a trace, or "show" followed by a run id
    std::string run;   // for `show`
    std::string db;
    bool json = false;
    std::size_t top = 10;
    double min_share = -1;  // --min-share; -1: [profile] min_share
};

CLI::App* add_profile_command(CLI::App& app, ProfileArgs& args);
int run_profile(const ProfileArgs& args, const std::string& config_path);

}  // namespace baton::cli
