#include "core/config.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "core/clock.hpp"
#include "core/printable.hpp"

namespace baton {

std::vector<std::string> default_config_layers() {
    std::vector<std::string> layers;
    const char* system = std::getenv("BATON_SYSTEM_CONFIG");
    layers.emplace_back(system && *system ? system : "/etc/baton/baton.toml");
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x)
        layers.push_back(std::string(x) + "/baton/baton.toml");
    else if (const char* h = std::getenv("HOME"); h && *h)
        layers.push_back(std::string(h) + "/.config/baton/baton.toml");
    return layers;
}

namespace {

// The [thresholds] keys, their field, and their allowed range.
struct ThresholdKey {
    const char* name;
    double Thresholds::*field;
    double min, max;
};

constexpr ThresholdKey kThresholdKeys[] = {
    {"gpu_memory_best_min_percent", &Thresholds::gpu_memory_best_min_percent, 0, 100},
    {"gpu_memory_best_max_percent", &Thresholds::gpu_memory_best_max_percent, 0, 100},
    {"gpu_memory_alarm_percent", &Thresholds::gpu_memory_alarm_percent, 0, 100},
    {"cpu_best_max_percent", &Thresholds::cpu_best_max_percent, 0, 100},
    {"cpu_alarm_percent", &Thresholds::cpu_alarm_percent, 0, 100},
    {"swap_best_max_bytes_per_second", &Thresholds::swap_best_max_bytes_per_second, 0, 1e12},
    {"swap_alarm_bytes_per_second", &Thresholds::swap_alarm_bytes_per_second, 0, 1e12},
    {"iowait_best_max_percent", &Thresholds::iowait_best_max_percent, 0, 100},
    {"iowait_alarm_percent", &Thresholds::iowait_alarm_percent, 0, 100},
    {"window_seconds", &Thresholds::window_seconds, 1, 86400},
    {"sustained_share", &Thresholds::sustained_share, 0.01, 1},
    {"gpu_memory_near_oom_percent", &Thresholds::gpu_memory_near_oom_percent, 0, 100},
    {"oom_horizon_minutes", &Thresholds::oom_horizon_minutes, 0, 10080},
    {"gpu_starved_percent", &Thresholds::gpu_starved_percent, 0, 100},
    {"gpu_busy_percent", &Thresholds::gpu_busy_percent, 0, 100},
    {"gpu_active_percent", &Thresholds::gpu_active_percent, 0, 100},
    {"gpu_fed_percent", &Thresholds::gpu_fed_percent, 0, 100},
    {"gpu_idle_percent", &Thresholds::gpu_idle_percent, 0, 100},
    {"idle_held_minutes", &Thresholds::idle_held_minutes, 0, 10080},
    {"tree_cpu_saturated_percent", &Thresholds::tree_cpu_saturated_percent, 0, 100},
    {"disk_busy_percent", &Thresholds::disk_busy_percent, 0, 100},
    {"psi_memory_full_percent", &Thresholds::psi_memory_full_percent, 0, 100},
    {"runnable_per_core", &Thresholds::runnable_per_core, 0.1, 1000},
    {"shm_used_percent", &Thresholds::shm_used_percent, 0, 100},
    {"shm_min_bytes", &Thresholds::shm_min_bytes, 0, 1e15},
    {"gpu_memory_leak_bytes", &Thresholds::gpu_memory_leak_bytes, 0, 1e15},
    {"data_wait_percent", &Thresholds::data_wait_percent, 0, 100},
    {"step_time_unstable_ratio", &Thresholds::step_time_unstable_ratio, 1, 1000},
    {"rank_straggler_ratio", &Thresholds::rank_straggler_ratio, 1, 1000},
};

std::string number(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

const ThresholdKey* threshold_key(const std::string& key) {
    for (const ThresholdKey& k : kThresholdKeys)
        if (key == k.name) return &k;
    return nullptr;
}

// A best range must lie below its alarm level, or every value would be both.
Status check_thresholds(const Thresholds& t, const std::string& origin) {
    auto order = [&](double lo, double hi, const char* a, const char* b) -> Status {
        if (lo <= hi) return Ok{};
        return make_error(origin + ": thresholds." + a + " must not exceed thresholds." + b);
    };
    for (Status s :
         {order(t.gpu_memory_best_min_percent, t.gpu_memory_best_max_percent, "gpu_memory_best_min_percent",
                "gpu_memory_best_max_percent"),
          order(t.gpu_memory_best_max_percent, t.gpu_memory_alarm_percent, "gpu_memory_best_max_percent",
                "gpu_memory_alarm_percent"),
          order(t.cpu_best_max_percent, t.cpu_alarm_percent, "cpu_best_max_percent", "cpu_alarm_percent"),
          order(t.swap_best_max_bytes_per_second, t.swap_alarm_bytes_per_second, "swap_best_max_bytes_per_second",
                "swap_alarm_bytes_per_second"),
          order(t.iowait_best_max_percent, t.iowait_alarm_percent, "iowait_best_max_percent", "iowait_alarm_percent")})
        if (!s.ok()) return s;
    return Ok{};
}

// Keys we know, so that a typo is an error instead of a silently ignored setting.
bool known_key(const std::string& table, const std::string& key) {
    if (table == "sample")
        return key == "proc_root" || key == "sys_root" || key == "shm_path" || key == "dev_root" ||
               key == "skip_idle_processes";
    if (table == "gpu") return key == "nvml_library" || key == "nvml_deadline_ms" || key == "pcie_interval_seconds";
    if (table == "history") return key == "db";
    if (table == "serve")
        return key == "listen" || key == "interval" || key == "token_file" || key == "metrics_without_token" ||
               key == "process_series" || key == "dcgm_compat" || key == "retention" || key == "allowed_hosts";
    if (table == "launch") return key == "log_group";
    if (table == "queue")
        return key == "free_memory_percent" || key == "share_margin_percent" || key == "visible_devices" ||
               key == "socket_group";
    if (table == "thresholds") return threshold_key(key) != nullptr;
    if (table == "bench") return key == "ok_share" || key == "memory_ok_share" || key == "scaling_alarm";
    if (table == "top") return key == "graphs" || key == "graph_symbols" || key == "history" || key == "columns";
    return false;
}

}  // namespace

Result<Config> parse_config(const std::string& text, const std::string& origin) {
    Config c;
    if (Status s = apply_config(text, origin, c); !s.ok()) return s.error();
    return c;
}

namespace {

// toml++ 3.3.0 (Debian's) reaches __builtin_unreachable() (undefined behaviour) when it asks
// whether some non-ASCII characters are whitespace: in a key, a quoted key, after a line-ending
// backslash, in a multi-line string (its issue 295; found by fuzz/fuzz_config). baton's keys are
// ASCII, so the text is checked before toml++ sees it: UTF-8 throughout, and non-ASCII characters
// only in comments and in a one-line string value (`db = "/home/josé/baton.db"`).
Status check_toml_text(const std::string& text, const std::string& file) {
    std::size_t line = 1;
    auto error = [&](const std::string& what) { return make_error(file + ":" + std::to_string(line) + ": " + what); };
    auto bad_byte = [&](std::size_t i) {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[i]));
        return error(std::string("not UTF-8 text (byte ") + byte + ")");
    };
    const auto non_ascii = [](char c) { return static_cast<unsigned char>(c) >= 0x80; };
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = utf8_sequence_length(text, i);
        if (n == 0) return bad_byte(i);
        const char c = text[i];
        if (c == '\n') {
            ++line;
            ++i;
        } else if (c == '#') {  // a comment: anything (UTF-8) to the end of the line
            while (i < text.size() && text[i] != '\n') {
                const std::size_t m = utf8_sequence_length(text, i);
                if (m == 0) return bad_byte(i);
                i += m;
            }
        } else if (c == '"' || c == '\'') {
            const bool triple = text.compare(i, 3, std::string(3, c)) == 0;
            const std::size_t start = i;
            i += triple ? 3 : 1;
            bool wide = false;  // holds non-ASCII text
            for (;;) {
                if (i >= text.size()) break;  // unterminated: toml++ says so
                if (triple && text.compare(i, 3, std::string(3, c)) == 0) {
                    i += 3;
                    break;
                }
                if (!triple && (text[i] == c || text[i] == '\n')) {
                    i += text[i] == c;
                    break;
                }
                if (c == '"' && text[i] == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ++i;  // an escape
                const std::size_t m = utf8_sequence_length(text, i);
                if (m == 0) return bad_byte(i);
                wide = wide || non_ascii(text[i]);
                line += text[i] == '\n';
                i += m;
            }
            if (wide) {
                std::size_t after = i;
                while (after < text.size() && (text[after] == ' ' || text[after] == '\t')) ++after;
                const bool ends_line = after >= text.size() || text[after] == '\n' || text[after] == '#' ||
                                       (text[after] == '\r' && after + 1 < text.size() && text[after + 1] == '\n');
                // ... and the line before it is exactly `key =`: nothing toml++ would read in
                // another state (a value that only looks like a string to this scan).
                const std::size_t line_start =
                    text.rfind('\n', start) == std::string::npos ? 0 : text.rfind('\n', start) + 1;
                std::size_t k = line_start;
                while (k < start && (text[k] == ' ' || text[k] == '\t')) ++k;
                const std::size_t key_start = k;
                while (k < start &&
                       (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '_' || text[k] == '-'))
                    ++k;
                const bool has_key = k > key_start;
                while (k < start && (text[k] == ' ' || text[k] == '\t')) ++k;
                const bool has_equals = k < start && text[k] == '=';
                if (has_equals) ++k;
                while (k < start && (text[k] == ' ' || text[k] == '\t')) ++k;
                if (triple || !has_key || !has_equals || k != start || !ends_line)
                    return error("non-ASCII text is allowed only in comments and in a one-line string value");
            }
        } else if (non_ascii(c)) {
            return error("non-ASCII text is allowed only in comments and in a one-line string value");
        } else {
            ++i;
        }
    }
    return Ok{};
}

}  // namespace

Status apply_config(const std::string& text, const std::string& file, Config& c) {
    if (Status s = check_toml_text(text, file); !s.ok()) return s;
    toml::table tbl;
    try {
        tbl = toml::parse(text, file);
    } catch (const toml::parse_error& e) {
        const auto& where = e.source().begin;
        return make_error(file + ":" + std::to_string(where.line) + ": " + std::string(e.description()));
    }
    for (auto&& [tk, tv] : tbl) {
        std::string table(tk.str());
        const toml::table* sub = tv.as_table();
        const std::string at = file + ":" + std::to_string(tv.source().begin.line);
        if (!sub ||
            (table != "sample" && table != "gpu" && table != "history" && table != "serve" && table != "queue" &&
             table != "thresholds" && table != "bench" && table != "top" && table != "launch"))
            return make_error(at + ": unknown section '" + table +
                              "' (known: [sample], [gpu], [history], [serve], [queue], [launch], [thresholds], "
                              "[bench], [top])");
        for (auto&& [k, v] : *sub) {
            std::string key(k.str());
            // Errors name the file and the line of the value, then the key.
            const std::string origin = file + ":" + std::to_string(v.source().begin.line);
            if (!known_key(table, key)) return make_error(origin + ": unknown key '" + table + "." + key + "'");
            const toml::node& node = v;  // (a structured binding cannot be captured before C++20 in clang 14)
            auto need_string = [&](std::string& into) -> Status {
                if (auto s = node.value<std::string>()) {
                    into = *s;
                    return Ok{};
                }
                return make_error(origin + ": '" + table + "." + key + "' must be a string");
            };
            auto need_bool = [&](bool& into) -> Status {
                if (node.is_boolean()) {
                    into = *node.value<bool>();
                    return Ok{};
                }
                return make_error(origin + ": '" + table + "." + key + "' must be true or false");
            };
            Status st = Ok{};
            if (const ThresholdKey* tk2 = table == "thresholds" ? threshold_key(key) : nullptr) {
                auto d = v.value<double>();
                if (!d || !(*d >= tk2->min && *d <= tk2->max))
                    return make_error(origin + ": 'thresholds." + key + "' must be a number from " + number(tk2->min) +
                                      " to " + number(tk2->max));
                c.thresholds.*(tk2->field) = *d;
            } else if (key == "proc_root")
                st = need_string(c.proc_root);
            else if (key == "sys_root")
                st = need_string(c.sys_root);
            else if (key == "shm_path")
                st = need_string(c.shm_path);
            else if (key == "dev_root")
                st = need_string(c.dev_root);
            else if (key == "skip_idle_processes") {
                auto b = v.value<bool>();
                if (!v.is_boolean() || !b)
                    return make_error(origin + ": 'sample.skip_idle_processes' must be true or false");
                c.skip_idle_processes = *b;
            } else if (table == "history" && key == "db") {
                st = need_string(c.history_db);
                if (st.ok() && c.history_db.empty())
                    return make_error(origin + ": 'history.db' must be a path, not empty");
            } else if (table == "bench") {
                const std::optional<double> d = v.is_number() ? v.value<double>() : std::nullopt;
                if (!d || !(*d > 0 && *d <= 1))
                    return make_error(origin + ": 'bench." + key +
                                      "' must be a share above 0 and at most 1, e.g. 0.85");
                (key == "ok_share"          ? c.bench_ok_share
                 : key == "memory_ok_share" ? c.bench_memory_ok_share
                                            : c.bench_scaling_alarm) = *d;
            } else if (table == "top") {
                if (key == "graphs") {
                    st = need_bool(c.top_graphs);
                } else if (key == "columns") {
                    // A list of names, or one string of them; baton top checks the names.
                    c.top_columns.clear();
                    if (const toml::array* list = node.as_array()) {
                        for (const toml::node& item : *list) {
                            auto name = item.value<std::string>();
                            if (!item.is_string() || !name || name->empty() ||
                                name->find_first_of(", ") != std::string::npos)
                                return make_error(origin + ": 'top.columns' must be a list of column names");
                            c.top_columns += (c.top_columns.empty() ? "" : ",") + *name;
                        }
                    } else {
                        st = need_string(c.top_columns);
                    }
                    if (st.ok() && c.top_columns.empty())
                        return make_error(origin + ": 'top.columns' must name at least one column");
                } else if (key == "graph_symbols") {
                    st = need_string(c.top_graph_symbols);
                    if (st.ok() && c.top_graph_symbols != "braille" && c.top_graph_symbols != "block")
                        return make_error(origin + ": 'top.graph_symbols' must be \"braille\" or \"block\"");
                } else {
                    const std::optional<double> d =
                        v.is_string() ? parse_duration(*v.value<std::string>()) : std::optional<double>();
                    if (!d || !(*d >= 60 && *d <= 3600))
                        return make_error(origin + ": 'top.history' must be a duration from 1m to 1h, e.g. \"10m\"");
                    c.top_history_seconds = *d;
                }
            } else if (table == "queue") {
                if (key == "socket_group") {
                    st = need_string(c.queue_socket_group);
                    if (st.ok() && c.queue_socket_group.empty())
                        return make_error(origin + ": 'queue.socket_group' must name a group");
                } else if (key == "visible_devices") {
                    std::string mode;
                    st = need_string(mode);
                    if (st.ok() && mode != "index" && mode != "uuid")
                        return make_error(origin + ": 'queue.visible_devices' must be \"index\" or \"uuid\"");
                    c.queue_visible_devices_uuid = mode == "uuid";
                } else {
                    const std::optional<double> d = v.is_number() ? v.value<double>() : std::nullopt;
                    if (!d || !(*d >= 0 && *d <= 100))
                        return make_error(origin + ": 'queue." + key + "' must be a number from 0 to 100");
                    (key == "free_memory_percent" ? c.queue_free_memory_percent : c.queue_share_margin_percent) = *d;
                }
            } else if (table == "launch") {
                st = need_string(c.launch_log_group);
                if (st.ok() && c.launch_log_group.empty())
                    return make_error(origin + ": 'launch.log_group' must name a group");
            } else if (table == "serve") {
                if (key == "allowed_hosts") {
                    // Host names as a browser sends them: letters, digits, '-', '.', or "[v6]".
                    c.serve_allowed_hosts.clear();
                    const toml::array* list = node.as_array();
                    if (!list) return make_error(origin + ": 'serve.allowed_hosts' must be a list of host names");
                    for (const toml::node& item : *list) {
                        auto name = item.value<std::string>();
                        bool ok = item.is_string() && name && !name->empty() && name->size() <= 253;
                        for (char ch : ok ? *name : std::string())
                            ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' ||
                                        ch == '[' || ch == ']' || ch == ':');
                        if (!ok)
                            return make_error(origin +
                                              ": 'serve.allowed_hosts' must be a list of host names, e.g. "
                                              "[\"gpu-01\", \"gpu-01.lan\"]");
                        std::string lower;
                        for (char ch : *name)
                            lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
                        c.serve_allowed_hosts.push_back(lower);
                    }
                } else if (key == "listen" || key == "token_file") {
                    std::string& into = key == "listen" ? c.serve_listen : c.serve_token_file;
                    st = need_string(into);
                    if (st.ok() && into.empty()) return make_error(origin + ": 'serve." + key + "' must not be empty");
                } else if (key == "interval") {
                    // "2s", "500ms" or a number of seconds, 0.1 s to 60 s like --interval.
                    std::optional<double> d;
                    if (auto s = v.value<std::string>(); s && v.is_string())
                        d = parse_duration(*s);
                    else if (v.is_number())
                        d = v.value<double>();
                    if (!d || !(*d >= 0.1 && *d <= 60))
                        return make_error(origin + ": 'serve.interval' must be a duration from 0.1s to 60s");
                    c.serve_interval_seconds = *d;
                } else if (key == "retention") {
                    const std::optional<double> d =
                        v.is_string() ? parse_duration(*v.value<std::string>()) : std::optional<double>();
                    if (!d || !(*d >= 3600 && *d <= 3650 * 86400.0))
                        return make_error(origin +
                                          ": 'serve.retention' must be a duration from 1h to 3650d, e.g. \"30d\"");
                    c.serve_retention_seconds = *d;
                } else if (key == "process_series") {
                    const auto i = v.is_integer() ? v.value<std::int64_t>() : std::nullopt;
                    if (!i || *i < 0 || *i > 10000)
                        return make_error(origin + ": 'serve.process_series' must be an integer from 0 to 10000");
                    c.serve_process_series = static_cast<std::size_t>(*i);
                } else {
                    st = need_bool(key == "dcgm_compat" ? c.serve_dcgm_compat : c.serve_metrics_without_token);
                }
            } else if (key == "nvml_library")
                st = need_string(c.nvml_library);
            else if (key == "nvml_deadline_ms") {
                // An integer node only: toml++ would convert 1e50 to an integer (undefined).
                const auto i = v.is_integer() ? v.value<std::int64_t>() : std::nullopt;
                if (!i || *i < 10 || *i > 600000)
                    return make_error(origin + ": 'gpu.nvml_deadline_ms' must be an integer from 10 to 600000");
                c.nvml_deadline_ms = static_cast<int>(*i);
            } else if (key == "pcie_interval_seconds") {
                auto d = v.value<double>();
                if (!d || !(*d >= 0 && *d <= 3600))  // (nan fails too)
                    return make_error(origin + ": 'gpu.pcie_interval_seconds' must be a number from 0 to 3600");
                c.pcie_interval_seconds = *d;
            }
            if (!st.ok()) return st.error();
        }
    }
    if (Status s = check_thresholds(c.thresholds, file); !s.ok()) return s.error();
    return Ok{};
}

namespace {

// Applies one layer; a missing optional layer is skipped.
Status apply_file(const std::string& path, bool required, Config& c) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        return make_error("config file " + path + " is a directory (give the file, e.g. " + path + "/config.toml)");
    std::ifstream in(path);
    if (!in) {
        if (required) return make_error("cannot read config file " + path);
        return Ok{};
    }
    // (bounded: a config is a few hundred bytes; a path to something huge is a mistake)
    constexpr std::size_t kMaxConfigBytes = 1 << 20;
    std::string text(kMaxConfigBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes) return make_error("config file " + path + " is larger than 1 MiB");
    return apply_config(text, path, c);
}

}  // namespace

Result<Config> load_config(const std::string& path) {
    Config c;
    for (const std::string& layer : default_config_layers())
        if (Status s = apply_file(layer, false, c); !s.ok()) return s.error();
    std::string explicit_path = path;
    if (explicit_path.empty())
        if (const char* e = std::getenv("BATON_CONFIG"); e && *e) explicit_path = e;
    if (!explicit_path.empty())
        if (Status s = apply_file(explicit_path, true, c); !s.ok()) return s.error();
    return c;
}

}  // namespace baton
