#include "test_support.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>
#include <sqlite3.h>

namespace fs = std::filesystem;

namespace baton::test {

TempDir::TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "baton-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

void TempDir::write(const std::string& relative, const std::string& content) const {
    fs::path p = fs::path(path_) / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
}

void TempDir::remove(const std::string& relative) const {
    std::error_code ec;
    fs::remove_all(fs::path(path_) / relative, ec);
}

const std::string& source_dir() {
    static const std::string dir = BATON_SOURCE_DIR;
    return dir;
}

const std::string& fixture_dir() {
    static const std::string dir = BATON_FIXTURE_DIR;
    return dir;
}

void copy_fixture(const std::string& name, const std::string& into) {
    fs::copy(fs::path(fixture_dir()) / name, into, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void expect_golden(const std::string& name, const std::string& actual) {
    const std::string path = std::string(BATON_SOURCE_DIR) + "/tests/ui/golden/" + name + ".txt";
    if (std::getenv("BATON_UPDATE_GOLDEN")) {
        std::ofstream(path, std::ios::binary) << actual;
        return;
    }
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "missing golden file " << path << " (run with BATON_UPDATE_GOLDEN=1)";
    std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(actual, expected) << "frame differs from " << path << "; actual:\n" << actual;
}

int start_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                  const std::string& log) {
    const pid_t pid = fork();
    if (pid == 0) {
        if (!log.empty()) {
            const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    return pid;
}

bool corrupt_table_root(const std::string& path, const std::string& table) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
        sqlite3_close(db);
        return false;
    }
    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
    long long root = 0, page_size = 0;
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", -1, &st, nullptr);
    sqlite3_bind_text(st, 1, table.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) root = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, nullptr);
    if (sqlite3_step(st) == SQLITE_ROW) page_size = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (root < 2 || page_size <= 0) return false;
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp((root - 1) * page_size);
    const std::string garbage(static_cast<std::size_t>(page_size), '\xA5');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    return static_cast<bool>(f);
}

std::string fake_nvml_library(const std::string& scenario) {
    return std::string(BATON_FAKE_NVML_DIR) + "/" + scenario + "/libnvidia-ml.so.1";
}

std::string scenario_file(const std::string& scenario) {
    return std::string(BATON_SCENARIO_DIR) + "/" + scenario + ".json";
}

void use_scenario(const std::string& scenario) {
    setenv("BATON_FAKE_NVML_SCENARIO", scenario_file(scenario).c_str(), 1);
}

std::string baton_binary() {
    return BATON_BINARY;
}

std::map<std::string, std::string> fake_env(const std::string& scenario) {
    return {{"BATON_NVML_LIBRARY", fake_nvml_library(scenario)}, {"BATON_FAKE_NVML_SCENARIO", scenario_file(scenario)}};
}

bool eventually(const std::function<bool()>& done, double seconds, double every) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(std::chrono::duration<double>(every));
    }
    return true;
}

CommandResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                  double timeout_seconds) {
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    auto start = std::chrono::steady_clock::now();
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    CommandResult r;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    char buf[65536];
    bool killed = false;
    while (open_fds > 0) {
        double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!killed && elapsed > timeout_seconds) {
            kill(pid, SIGKILL);
            killed = true;
        }
        if (poll(fds, 2, 100) <= 0) continue;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            } else {
                (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
            }
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

std::function<std::optional<std::string>(const std::string&)> env_lookup(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const std::string& k) {
        auto it = vars.find(k);
        return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
}

}  // namespace baton::test
