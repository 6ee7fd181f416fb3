// The config key table (core/config_keys.cpp): docs/cli.md's key table is it, row for row; the
// example file there names every key and parses; every key refuses a bad value with its own rule;
// a default written back reads back the same; doctor's "changed keys" are exactly what a file set.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/config.hpp"
#include "core/config_keys.hpp"
#include "test_support.hpp"

using namespace baton;

namespace {

std::string cli_doc() {
    std::ifstream in(baton::test::source_dir() + "/docs/cli.md");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string row_text(const ConfigKey& k) {
    const std::string value = k.default_is_value ? "`" + k.default_value + "`" : k.default_value;
    return "| `" + k.section + "." + k.name + "` | " + k.type + " | " + value + " | " + k.rule + " | " + k.help + " |";
}

// The lines of the table headed `| key | type | default | rule | what |`.
std::vector<std::string> doc_table(const std::string& doc) {
    std::istringstream in(doc);
    std::vector<std::string> rows;
    std::string line;
    bool in_table = false;
    while (std::getline(in, line)) {
        if (line == "| key | type | default | rule | what |") {
            in_table = true;
            std::getline(in, line);  // |---|...
            continue;
        }
        if (!in_table) continue;
        if (line.rfind("| ", 0) != 0) break;
        rows.push_back(line);
    }
    return rows;
}

// The ```toml block of the "## Configuration" section.
std::string example_file(const std::string& doc) {
    const std::size_t section = doc.find("\n## Configuration");
    const std::size_t start = doc.find("```toml\n", section);
    const std::size_t end = doc.find("```\n", start + 8);
    if (section == std::string::npos || start == std::string::npos || end == std::string::npos) return "";
    return doc.substr(start + 8, end - start - 8);
}

}  // namespace

TEST(ConfigKeys, TheDocsTableIsTheKeyTable) {
    std::vector<std::string> expected;
    for (const ConfigKey& k : config_keys()) expected.push_back(row_text(k));
    const std::vector<std::string> documented = doc_table(cli_doc());
    std::string table;
    for (const std::string& r : expected) table += r + "\n";
    EXPECT_EQ(documented, expected) << "docs/cli.md's key table differs from core/config_keys.cpp; the table is:\n"
                                    << table;
}

TEST(ConfigKeys, TheExampleFileNamesEveryKeyAndParses) {
    const std::string example = example_file(cli_doc());
    ASSERT_FALSE(example.empty()) << "no ```toml block under ## Configuration in docs/cli.md";
    Result<Config> parsed = parse_config(example, "docs/cli.md");
    EXPECT_TRUE(parsed.ok()) << parsed.error().message;
    std::set<std::string> in_example, in_table;
    std::istringstream in(example);
    std::string line, section;
    const std::regex header(R"(^\[([a-z_]+)\])"), key(R"(^([a-z_]+)\s*=)");
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, header))
            section = m[1];
        else if (std::regex_search(line, m, key))
            in_example.insert(section + "." + std::string(m[1]));
    }
    for (const ConfigKey& k : config_keys()) in_table.insert(k.section + "." + k.name);
    EXPECT_EQ(in_example, in_table) << "the example file in docs/cli.md and the key table name different keys";
}

TEST(ConfigKeys, EveryKeyRefusesAWrongTypeWithItsName) {
    for (const ConfigKey& k : config_keys()) {
        // An inline table is no key's type.
        Result<Config> c = parse_config("[" + k.section + "]\n" + k.name + " = { x = 1 }\n", "t.toml");
        ASSERT_FALSE(c.ok()) << k.section << "." << k.name << " took a table";
        EXPECT_NE(c.error().message.find("t.toml:2: '" + k.section + "." + k.name + "' must"), std::string::npos)
            << c.error().message;
    }
    Result<Config> c = parse_config("[gpu]\nnvml_deadline_ms = 5\n", "t.toml");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().message, "t.toml:2: 'gpu.nvml_deadline_ms' must be an integer from 10 to 600000");
}

TEST(ConfigKeys, ADefaultWrittenBackReadsTheSame) {
    const Config defaults;
    for (const ConfigKey& k : config_keys()) {
        const std::string value = config_value(defaults, k.section, k.name);
        ASSERT_FALSE(value.empty()) << k.section << "." << k.name;
        // Empty strings and lists mean "unset" for some keys, and are refused as values.
        if (value == "\"\"" || value == "[]") continue;
        Result<Config> c = parse_config("[" + k.section + "]\n" + k.name + " = " + value + "\n", "t.toml");
        ASSERT_TRUE(c.ok()) << k.section << "." << k.name << " = " << value << ": " << c.error().message;
        EXPECT_EQ(config_value(*c, k.section, k.name), value) << k.section << "." << k.name;
        EXPECT_TRUE(changed_config_keys(*c).empty()) << k.section << "." << k.name << " = " << value;
    }
}

TEST(ConfigKeys, ChangedKeysAreWhatTheFileSet) {
    Result<Config> c = parse_config(
        "[serve]\nlisten = \"0.0.0.0:9000\"\nretention = \"7d\"\n[queue]\nvisible_devices = \"uuid\"\n"
        "[top]\ncolumns = [\"user\", \"gpu\"]\n[thresholds]\ncpu_alarm_percent = 85\n",
        "t.toml");
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(changed_config_keys(*c),
              (std::vector<std::string>{"serve.listen = \"0.0.0.0:9000\"", "serve.retention = \"7d\"",
                                        "queue.visible_devices = \"uuid\"", "top.columns = [\"user\", \"gpu\"]",
                                        "thresholds.cpu_alarm_percent = 85"}));
    EXPECT_EQ(config_value(*c, "serve", "interval"), "\"1s\"");
    EXPECT_EQ(config_value(*c, "serve", "nope"), "");
}

TEST(ConfigKeys, SectionsInTheTablesOrder) {
    EXPECT_EQ(config_sections(), (std::vector<std::string>{"sample", "jobs", "gpu", "history", "serve", "launch",
                                                           "profile", "queue", "bench", "top", "thresholds"}));
    Result<Config> c = parse_config("[nope]\nx = 1\n", "t.toml");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(
        c.error().message,
        "t.toml:1: unknown section 'nope' (known: [sample], [jobs], [gpu], [history], [serve], [launch], [profile], "
        "[queue], [bench], [top], [thresholds])");
}
