// Every key of baton's config file, written once: its section and name, its type, what values it
// takes, its default and a line of help. The parser reads and checks a key through its row
// (core/config.cpp), `baton doctor` shows the keys a machine's files change through it, and a
// test (tests/core/config_keys_test.cpp) fails when docs/cli.md's key table or its example file
// disagree with it. A new key is one row in core/config_keys.cpp and one member in its section's
// struct of Config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace baton {

struct ConfigKey {
    std::string section;           // "serve"
    std::string name;              // "listen"
    std::string type;              // "string", "boolean", "integer", "number", "duration" or "list of strings"
    std::string default_value;     // as TOML (`"127.0.0.1:22866"`, `5`, `"30d"`), or what unset means
    bool default_is_value = true;  // false: default_value says what unset means ("none")
    std::string rule;              // what values it takes, as its error says: "must be a number from 0 to 100"
    std::string help;              // one line
};

// In the order of docs/cli.md: section by section, as the file is usually written.
const std::vector<ConfigKey>& config_keys();

// The sections, in that order.
const std::vector<std::string>& config_sections();

// The key's value in `c` as TOML text (`"127.0.0.1:22866"`, `true`, `5`, `"30d"`, `["a", "b"]`).
// Empty for a key that is not in the table.
std::string config_value(const Config& c, const std::string& section, const std::string& name);

// The keys whose value in `c` differs from the default, as `section.name = value` lines.
std::vector<std::string> changed_config_keys(const Config& c);

// One TOML value, as the parser (core/config.cpp) hands it over: the table does not see toml++.
struct ConfigValue {
    enum class Kind { string, boolean, integer, floating, array, other };
    Kind kind = Kind::other;
    std::string text;
    bool boolean = false;
    std::int64_t integer = 0;
    double floating = 0;
    std::vector<ConfigValue> items;  // an array's
};

bool known_config_section(const std::string& section);

// Sets `section.name` from `v`, checked against its row; the error is one line that starts with
// `origin` (file:line) and names the key. An unknown key is an error too.
Status set_config_key(const std::string& section, const std::string& name, const ConfigValue& v,
                      const std::string& origin, Config& c);

}  // namespace baton
