#include "core/config.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

namespace baton {

std::string default_config_path() {
    if (const char* p = std::getenv("BATON_CONFIG"); p && *p) return p;
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/baton/config.toml";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.config/baton/config.toml";
    return {};
}

namespace {

// Keys we know, so that a typo is an error instead of a silently ignored setting.
bool known_key(const std::string& table, const std::string& key) {
    if (table == "sample")
        return key == "proc_root" || key == "sys_root" || key == "shm_path" || key == "skip_idle_processes";
    if (table == "gpu") return key == "nvml_library" || key == "nvml_deadline_ms" || key == "pcie_interval_seconds";
    return false;
}

}  // namespace

Result<Config> parse_config(const std::string& text, const std::string& origin) {
    toml::table tbl;
    try {
        tbl = toml::parse(text, origin);
    } catch (const toml::parse_error& e) {
        const auto& where = e.source().begin;
        return make_error(origin + ":" + std::to_string(where.line) + ": " + std::string(e.description()));
    }
    Config c;
    for (auto&& [tk, tv] : tbl) {
        std::string table(tk.str());
        const toml::table* sub = tv.as_table();
        if (!sub || (table != "sample" && table != "gpu"))
            return make_error(origin + ": unknown section '" + table + "' (known: [sample], [gpu])");
        for (auto&& [k, v] : *sub) {
            std::string key(k.str());
            if (!known_key(table, key)) return make_error(origin + ": unknown key '" + table + "." + key + "'");
            auto need_string = [&](std::string& into) -> Status {
                if (auto s = v.value<std::string>()) {
                    into = *s;
                    return Ok{};
                }
                return make_error(origin + ": '" + table + "." + key + "' must be a string");
            };
            Status st = Ok{};
            if (key == "proc_root")
                st = need_string(c.proc_root);
            else if (key == "sys_root")
                st = need_string(c.sys_root);
            else if (key == "shm_path")
                st = need_string(c.shm_path);
            else if (key == "skip_idle_processes") {
                auto b = v.value<bool>();
                if (!v.is_boolean() || !b)
                    return make_error(origin + ": 'sample.skip_idle_processes' must be true or false");
                c.skip_idle_processes = *b;
            } else if (key == "nvml_library")
                st = need_string(c.nvml_library);
            else if (key == "nvml_deadline_ms") {
                auto i = v.value<std::int64_t>();
                if (!v.is_integer() || !i || *i < 10 || *i > 600000)
                    return make_error(origin + ": 'gpu.nvml_deadline_ms' must be an integer from 10 to 600000");
                c.nvml_deadline_ms = static_cast<int>(*i);
            } else if (key == "pcie_interval_seconds") {
                auto d = v.value<double>();
                if (!d || *d < 0 || *d > 3600)
                    return make_error(origin + ": 'gpu.pcie_interval_seconds' must be a number from 0 to 3600");
                c.pcie_interval_seconds = *d;
            }
            if (!st.ok()) return st.error();
        }
    }
    return c;
}

Result<Config> load_config(const std::string& path) {
    const bool explicit_path = !path.empty();
    std::string p = explicit_path ? path : default_config_path();
    if (p.empty()) return Config{};
    std::ifstream in(p);
    if (!in) {
        if (explicit_path) return make_error("cannot read config file " + p);
        return Config{};
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse_config(ss.str(), p);
}

}  // namespace baton
