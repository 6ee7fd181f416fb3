#include "store/run_energy.hpp"

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)
#include <nlohmann/json.hpp>

#include "core/json_writer.hpp"

namespace baton::store {

void write_energy_json(JsonWriter& w, const RunEnergy& e) {
    w.begin_object();
    w.optional_field("gpu_joules", e.gpu_joules);
    w.optional_field("cpu_joules", e.cpu_joules);
    w.optional_field("joules_per_step", e.joules_per_step);
    w.optional_field("joules_per_sample", e.joules_per_sample);
    w.end_object();
}

std::string to_json(const RunEnergy& e) {
    if (e.empty()) return "";
    std::string out;
    JsonWriter w(out);
    write_energy_json(w, e);
    w.finish();
    return out;
}

RunEnergy run_energy_from_json(std::string_view text) {
    RunEnergy e;
    if (text.empty()) return e;
    const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return e;
    auto number = [&](const char* key) -> std::optional<double> {
        auto it = j.find(key);
        if (it == j.end() || !it->is_number() || it->get<double>() < 0) return std::nullopt;
        return it->get<double>();
    };
    e.gpu_joules = number("gpu_joules");
    e.cpu_joules = number("cpu_joules");
    e.joules_per_step = number("joules_per_step");
    e.joules_per_sample = number("joules_per_sample");
    return e;
}

std::string joules_text(double joules) {
    if (joules >= 1e6) return fmt::format("{:.1f} MJ", joules / 1e6);
    if (joules >= 1e4) return fmt::format("{:.1f} kJ", joules / 1e3);
    if (joules >= 10) return fmt::format("{:.0f} J", joules);
    return fmt::format("{:.3g} J", joules);
}

std::string energy_text(const RunEnergy& e) {
    std::string out;
    if (e.gpu_joules) out += "GPUs " + joules_text(*e.gpu_joules);
    if (e.cpu_joules) out += (out.empty() ? "" : ", ") + std::string("CPU packages ") + joules_text(*e.cpu_joules);
    std::string per;
    if (e.joules_per_step) per += joules_text(*e.joules_per_step) + " per step";
    if (e.joules_per_sample) per += (per.empty() ? "" : ", ") + joules_text(*e.joules_per_sample) + " per sample";
    if (!per.empty()) out += "; " + per;
    return out;
}

}  // namespace baton::store
