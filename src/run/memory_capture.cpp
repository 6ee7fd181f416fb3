#include "run/memory_capture.hpp"

#include "run/hook_files.hpp"

namespace baton::run {

std::vector<std::pair<std::string, std::string>> memory_environment(const std::string& dir,
                                                                    std::int64_t history_events) {
    std::vector<std::pair<std::string, std::string>> env = {{"BATON_MEMORY_DIR", dir}};
    if (history_events > 0) env.emplace_back("BATON_MEMORY_HISTORY", std::to_string(history_events));
    return env;
}

Result<TakenCapture> take_oom_capture(const std::string& dir, const std::string& path) {
    Result<std::string> bytes = read_hook_file(dir, path, gpu_memory::kMaxCaptureBytes, "the out-of-memory capture");
    if (!bytes.ok()) return bytes.error();
    Result<gpu_memory::OomCapture> c = gpu_memory::parse_oom_capture(*bytes);
    if (!c.ok()) return make_error("the out-of-memory capture " + path + ": " + c.error().message);
    return TakenCapture{std::move(*bytes), std::move(*c)};
}

}  // namespace baton::run
