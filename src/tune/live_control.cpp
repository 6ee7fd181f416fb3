#include "tune/live_control.hpp"

#include <cstdio>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)
#include <nlohmann/json.hpp>

#include "core/files.hpp"
#include "core/printable.hpp"
#include "diagnose/rules.hpp"
#include "tune/trial.hpp"

namespace baton::tune {

std::optional<LiveSetting> live_setting_of(const std::string& body) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    auto whole = [&](const char* key, int lo, int hi) -> std::optional<int> {
        auto it = j.find(key);
        if (it == j.end() || !it->is_number_integer()) return std::nullopt;
        const auto v = it->get<std::int64_t>();
        if (v < lo || v > hi) return std::nullopt;
        return static_cast<int>(v);
    };
    std::optional<int> workers = whole("num_workers", 0, 4096), prefetch = whole("prefetch_factor", 1, 1 << 20);
    if (!workers || !prefetch) return std::nullopt;
    return LiveSetting{*workers, *prefetch};
}

run::LiveControl live_control(const std::string& control_file, std::shared_ptr<LiveTuner> tuner) {
    run::LiveControl c;
    c.control_file = control_file;
    auto rank = std::make_shared<std::optional<int>>();  // the lowest rank's steps count
    c.on_event = [tuner, rank](const store::HookEvent& e) {
        if (e.type == "step") {
            if (!*rank || e.step.rank < **rank) *rank = e.step.rank;
            if (e.step.rank == **rank) tuner->step({e.step.step_ms, e.step.wait_ms, e.step.samples});
        } else if (e.type == "loader") {
            if (std::optional<LoaderFacts> f = loader_facts_of(e.body)) tuner->loader(*f);
        } else if (e.type == "live") {
            if (std::optional<LiveSetting> s = live_setting_of(e.body)) tuner->applied(*s);
        }
    };
    c.on_sample = [tuner, control_file](const Snapshot& snap) {
        if (snap.cpu.total.utilization_percent) tuner->cpu_busy(*snap.cpu.total.utilization_percent / 100);
        if (std::optional<LiveSetting> ask = tuner->decide()) {
            const std::string text =
                fmt::format("{{\"num_workers\":{},\"prefetch_factor\":{}}}", ask->num_workers, ask->prefetch_factor);
            if (Status st = write_file_atomically(control_file, text); !st.ok())
                std::fprintf(stderr, "baton: --tune-live: %s\n", printable(st.error().message).c_str());
        }
        std::vector<diagnose::Finding> said;
        for (const std::string& line : tuner->take_lines()) {
            std::fprintf(stderr, "baton: --tune-live: %s\n", printable(line).c_str());
            said.push_back(diagnose::make_finding(
                "live_tune", diagnose::Severity::info, "job", line,
                "Keep what was kept in the script: DataLoader(..., num_workers=N, prefetch_factor=P), with N and P "
                "from the last change kept (or run with --tune-live again)."));
        }
        return said;
    };
    return c;
}

}  // namespace baton::tune
