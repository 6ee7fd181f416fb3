// Helpers shared by the test executables: temporary trees, fake NVML paths, and running
// the real baton binary.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace baton::test {

inline constexpr std::uint64_t GiB = 1ull << 30;

// A temporary directory removed (recursively) on destruction.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    // Writes `content` to path()/relative, creating parent directories.
    void write(const std::string& relative, const std::string& content) const;
    void remove(const std::string& relative) const;

  private:
    std::string path_;
};

// This checkout (tests read docs/ and fixtures from it) and tests/fixtures/. The build's paths are
// compiled into test_support.cpp alone, so the other test sources do not depend on where the tree is
// (a compiler cache shared by clones in other folders hits for them).
const std::string& source_dir();
const std::string& fixture_dir();

// Copies the checked-in fixture tree tests/fixtures/NAME into `into` (so tests can change it).
void copy_fixture(const std::string& name, const std::string& into);

std::string read_text(const std::string& path);

// An environment lookup (launch's EnvLookup) that answers from `vars` alone.
std::function<std::optional<std::string>(const std::string&)> env_lookup(std::map<std::string, std::string> vars);

// Compares `actual` with tests/ui/golden/NAME.txt (a gtest failure showing the frame when they
// differ). With BATON_UPDATE_GOLDEN=1 in the environment it writes the file instead: review the diff.
void expect_golden(const std::string& name, const std::string& actual);

// <build>/tests/fake_nvml/SCENARIO/libnvidia-ml.so.1 and tests/fake_nvml/scenarios/SCENARIO.json.
std::string fake_nvml_library(const std::string& scenario);
std::string scenario_file(const std::string& scenario);

// Points the fake NVML at a scenario for this process (BATON_FAKE_NVML_SCENARIO).
void use_scenario(const std::string& scenario);

struct CommandResult {
    int exit_code = -1;  // -1: killed by a signal
    std::string out, err;
    double seconds = 0;
};

// Runs argv[0] with arguments, extra environment variables set, stdin from /dev/null.
// Kills it after `timeout_seconds`.
CommandResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                  double timeout_seconds = 60);

// Polls `done` every `every` seconds until it holds or `seconds` have passed; whether it held. How a
// test waits for a state it means (a job running, a file written), never by a fixed sleep: a loaded
// machine only makes it take longer, and an idle one does not wait for nothing. (A `done` that starts
// a process, such as the baton binary, is polled less often: 0.1 s.)
bool eventually(const std::function<bool()>& done, double seconds, double every = 0.02);

// Starts argv[0] (a path, not looked up) in the background with `env` set over this process's
// environment, its stdout and stderr appended to `log` when one is named (else this process's).
// The caller ends it by the pid returned.
int start_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                  const std::string& log = "");

// Damages the SQLite database at `path` (closed, its WAL checkpointed) where `table` begins:
// overwrites the table's root page with garbage, as a bad sector or a torn copy would.
// False when the table is not there.
bool corrupt_table_root(const std::string& path, const std::string& table);

// The baton binary under test, and the environment that makes it use a fake scenario.
std::string baton_binary();
std::map<std::string, std::string> fake_env(const std::string& scenario);

}  // namespace baton::test
