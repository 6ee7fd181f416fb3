#include "core/config.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <toml++/toml.h>

#include "core/config_keys.hpp"
#include "core/files.hpp"
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

// A toml++ node as the key table takes it (core/config_keys.hpp).
ConfigValue config_value_of(const toml::node& node) {
    ConfigValue v;
    using K = ConfigValue::Kind;
    if (auto t = node.as_string()) {
        v.kind = K::string;
        v.text = t->get();
    } else if (auto b = node.as_boolean()) {
        v.kind = K::boolean;
        v.boolean = b->get();
    } else if (auto i = node.as_integer()) {
        v.kind = K::integer;
        v.integer = i->get();
    } else if (auto f = node.as_floating_point()) {
        v.kind = K::floating;
        v.floating = f->get();
    } else if (auto list = node.as_array()) {
        v.kind = K::array;
        for (const toml::node& item : *list) v.items.push_back(config_value_of(item));
    }
    return v;
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
        if (!sub || !known_config_section(table)) {
            std::string known;
            for (const std::string& name : config_sections()) known += (known.empty() ? "[" : ", [") + name + "]";
            return make_error(at + ": unknown section '" + table + "' (known: " + known + ")");
        }
        for (auto&& [k, v] : *sub) {
            // Errors name the file and the line of the value, then the key.
            const std::string origin = file + ":" + std::to_string(v.source().begin.line);
            if (Status st = set_config_key(table, std::string(k.str()), config_value_of(v), origin, c); !st.ok())
                return st.error();
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
    const std::optional<std::string> text = read_small_file(path, kMaxConfigBytes);
    if (!text) return make_error("config file " + path + " is larger than 1 MiB or cannot be read");
    return apply_config(*text, path, c);
}

}  // namespace

std::vector<std::string> config_files(const std::string& path) {
    std::vector<std::string> files = default_config_layers();
    std::string explicit_path = path;
    if (explicit_path.empty())
        if (const char* e = std::getenv("BATON_CONFIG"); e && *e) explicit_path = e;
    if (!explicit_path.empty()) files.push_back(explicit_path);
    return files;
}

Result<Config> load_config(const std::string& path) {
    Config c;
    const std::vector<std::string> files = config_files(path);
    const std::size_t defaults = default_config_layers().size();
    for (std::size_t i = 0; i < files.size(); ++i)
        if (Status s = apply_file(files[i], i >= defaults, c); !s.ok()) return s.error();
    return c;
}

}  // namespace baton
