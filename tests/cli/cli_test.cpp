// The command line contract: help, version, and one-line errors with exit code 2.
#include <gtest/gtest.h>

#include "test_support.hpp"

using baton::test::baton_binary;
using baton::test::run;

namespace {

void expect_usage_error(const std::vector<std::string>& args, const std::string& fragment) {
    std::vector<std::string> argv{baton_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(argv, {{"BATON_NVML_LIBRARY", "/nonexistent"}});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_EQ(r.err.rfind("baton: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

}  // namespace

TEST(Cli, Version) {
    auto r = run({baton_binary(), "--version"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out.rfind("baton ", 0), 0u);
}

TEST(Cli, HelpListsSubcommands) {
    for (auto args : {std::vector<std::string>{"--help"}, {"help"}, {}}) {
        args.insert(args.begin(), baton_binary());
        auto r = run(args);
        EXPECT_EQ(r.exit_code, 0);
        EXPECT_NE(r.out.find("snapshot"), std::string::npos) << r.out;
    }
}

TEST(Cli, HelpForOneSubcommand) {
    auto a = run({baton_binary(), "help", "snapshot"});
    auto b = run({baton_binary(), "snapshot", "--help"});
    EXPECT_EQ(a.exit_code, 0);
    EXPECT_EQ(b.exit_code, 0);
    EXPECT_NE(a.out.find("--interval"), std::string::npos);
    EXPECT_NE(b.out.find("--interval"), std::string::npos);
}

TEST(Cli, BadUsageIsOneLineAndExitTwo) {
    expect_usage_error({"--bogus"}, "--bogus");
    expect_usage_error({"frobnicate"}, "frobnicate");
    expect_usage_error({"help", "frobnicate"}, "frobnicate");
    expect_usage_error({"snapshot", "--bogus"}, "--bogus");
    expect_usage_error({"snapshot", "--count", "0"}, "--count");
    expect_usage_error({"snapshot", "--count", "x"}, "--count");
    expect_usage_error({"snapshot", "--count"}, "--count");
    expect_usage_error({"snapshot", "--interval", "-1"}, "--interval");
    expect_usage_error({"snapshot", "--interval", "nan"}, "--interval");
    expect_usage_error({"snapshot", "--interval", "1e999"}, "--interval");
    expect_usage_error({"snapshot", "--json", "--prometheus"}, "--json");
    expect_usage_error({"snapshot", "--top", "-3"}, "--top");
    expect_usage_error({"top", "--delay", "0.05"}, "--delay");
    expect_usage_error({"top", "-d", "nan"}, "--delay");
    expect_usage_error({"top", "--width", "5", "--once"}, "--width");
    expect_usage_error({"top", "--sort", "bogus"}, "--sort");
    expect_usage_error({"top", "--mark-styles"}, "--mark-styles");
    expect_usage_error({"top", "--count", "-1"}, "--count");
}

TEST(Cli, BadConfigIsOneLineAndExitOne) {
    baton::test::TempDir d;
    d.write("bad.toml", "[sample]\nproc_root = [\n");
    auto r = run({baton_binary(), "--config", d.path() + "/bad.toml", "snapshot"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_NE(r.err.find("bad.toml"), std::string::npos);
    r = run({baton_binary(), "--config", d.path() + "/missing.toml", "snapshot"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("missing.toml"), std::string::npos);
}

TEST(Cli, DiagnoseCannotJudgeIsExitThree) {
    // diagnose uses 1 and 2 for warnings and critical findings; failing to judge is 3.
    baton::test::TempDir d;
    d.write("bad.jsonl", "\n{\"time\":\"2025-11-29T07:06:40Z\"}\n");
    d.write("empty.jsonl", "\n\n");
    auto expect_three = [&](const std::vector<std::string>& args, const std::string& fragment) {
        std::vector<std::string> argv{baton_binary(), "--config", "/dev/null"};
        argv.insert(argv.end(), args.begin(), args.end());
        auto r = run(argv);
        EXPECT_EQ(r.exit_code, 3) << r.err;
        EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
        EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    };
    expect_three({"diagnose", "--interval", "0"}, "--interval");
    expect_three({"diagnose", "--bogus"}, "--bogus");
    expect_three({"diagnose", "--duration", "0s"}, "--duration");
    expect_three({"diagnose", "--duration", "ten"}, "--duration");
    expect_three({"diagnose", "--replay", d.path() + "/missing.jsonl"}, "cannot read");
    expect_three({"diagnose", "--replay", d.path() + "/bad.jsonl"}, "bad.jsonl:2: 'interval_seconds' must be present");
    expect_three({"diagnose", "--replay", d.path() + "/empty.jsonl"}, "no snapshots");
    // A file named "run" is not the run subcommand (its words are cut off only after `run`).
    expect_three({"diagnose", "--replay", "run"}, "cannot read run");
}
