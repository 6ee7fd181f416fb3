#include "run/profile_window.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "profile/trace_events.hpp"
#include "run/hook_files.hpp"

namespace baton::run {

std::vector<std::pair<std::string, std::string>> profile_environment(const std::string& dir, const ProfileRequest& r) {
    std::vector<std::pair<std::string, std::string>> env = {
        {"BATON_PROFILE_DIR", dir},
        {"BATON_PROFILE_WARMUP", std::to_string(r.automatic ? 0 : r.warmup)},
        {"BATON_PROFILE_STEPS", std::to_string(r.steps)}};
    if (r.automatic) env.emplace_back("BATON_PROFILE_TRIGGER", profile_trigger_path(dir));
    return env;
}

std::string profile_trigger_path(const std::string& dir) {
    return dir + "/start";
}

bool explained_by_profile(const diagnose::Finding& f) {
    return f.rule == "gpu_underused" || f.rule == "step_time_unstable" || f.rule == "input_bound";
}

std::string busy_gpu_with_idle_sms(const diagnose::Window& w, const std::vector<unsigned>& job_gpus,
                                   const Thresholds& t) {
    constexpr double kIdleSmPercent = 50;
    for (unsigned gpu : job_gpus) {
        double util = 0, sm = 0;
        std::size_t n = 0;
        for (const Snapshot& snap : w)
            for (const GpuInfo& g : snap.gpus)
                if (g.index == gpu && g.utilization_percent && g.sm_activity_percent) {
                    util += *g.utilization_percent;
                    sm += *g.sm_activity_percent;
                    ++n;
                }
        if (n < 5) continue;
        util /= static_cast<double>(n);
        sm /= static_cast<double>(n);
        if (util >= t.gpu_busy_percent && sm < kIdleSmPercent)
            return fmt::format("GPU{} is {:.0f} % busy but its SMs {:.0f} % active", gpu, util, sm);
    }
    return "";
}

Status trigger_profile_window(const std::string& dir) {
    const std::string path = profile_trigger_path(dir);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return make_error("cannot start the profile window: " + path + ": " + std::strerror(errno));
    ::close(fd);
    return Ok{};
}

Result<TakenProfile> take_profile(const std::string& dir, const std::string& path, const ProfileRequest& r) {
    Result<std::string> bytes = read_hook_file(dir, path, std::uint64_t{4} << 30, "the profile");
    if (!bytes.ok()) return bytes.error();
    TakenProfile t;
    t.trace_gz = std::move(*bytes);
    Result<profile::Trace> trace = profile::parse_trace_bytes(t.trace_gz);
    if (!trace.ok()) return make_error("the profile " + path + ": " + trace.error().message);
    t.analysis = profile::analyse(*trace);
    t.findings = profile::judge_profile(t.analysis, r.rules);
    return t;
}

std::string no_profile_note(std::int64_t steps_seen, const ProfileRequest& r, bool triggered) {
    if (r.automatic && !triggered)
        return "baton: --profile=auto took no window: no finding a profile explains (gpu_underused, "
               "step_time_unstable, input_bound) fired, and no GPU of the job was busy with idle SMs";
    if (r.automatic)
        return fmt::format("baton: --profile=auto: the run ended before its window's {} steps", r.steps + 1);
    if (steps_seen == 0)
        return "baton: --profile recorded no window: the script sent no step. The window is taken inside "
               "baton.torch.watch (import baton.torch; loader = baton.torch.watch(loader); docs/profile.md)";
    return fmt::format(
        "baton: --profile recorded no window: the run ended after {} step(s), before the window's {} (its "
        "warm-up of {}, [profile] warmup, then {} recorded)",
        steps_seen, r.warmup + 1 + r.steps, r.warmup, r.steps);
}

}  // namespace baton::run
