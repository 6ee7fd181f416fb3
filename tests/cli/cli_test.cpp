// The command line contract: help, version, and one-line errors with exit code 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

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

// "baton 0.1.0 (commit 53c4104a1b2c)": the version and the commit the binary was built from.
TEST(Cli, Version) {
    auto r = run({baton_binary(), "--version"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out.rfind("baton ", 0), 0u);
    const std::size_t at = r.out.find(" (commit ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string commit = r.out.substr(at + 9, r.out.find(')') - at - 9);
    auto git = run({"/usr/bin/git", "-C", baton::test::source_dir(), "rev-parse", "--short=12", "HEAD"});
    if (git.exit_code == 0) {  // a checkout: the binary names a commit of it (HEAD, unless built before a commit)
        ASSERT_GE(commit.size(), 12u) << r.out;
        EXPECT_EQ(commit.find_first_not_of("0123456789abcdef"), 12u == commit.size() ? std::string::npos : 12u);
        auto known = run(
            {"/usr/bin/git", "-C", baton::test::source_dir(), "cat-file", "-e", commit.substr(0, 12) + "^{commit}"});
        EXPECT_EQ(known.exit_code, 0) << r.out << " names no commit of this repository";
    } else {
        EXPECT_EQ(commit, "unknown");
    }
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
    expect_usage_error({"top", "--once", "--columns", "cpu,bogus"}, "--columns");
    expect_usage_error({"top", "--mark-styles"}, "--mark-styles");
    expect_usage_error({"top", "--count", "-1"}, "--count");
    // A flag that would not be honoured is refused, not ignored.
    expect_usage_error({"snapshot", "--json", "--top", "3"}, "--top");
    expect_usage_error({"snapshot", "--prometheus", "--top", "3"}, "--top");
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
    // The parser's message quotes the text it saw, newline included: still one line, escaped.
    d.write("split.toml", "[sample]\nskip_idle_processes = tr\nue\n");
    r = run({baton_binary(), "--config", d.path() + "/split.toml", "snapshot"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_NE(r.err.find("saw 'tr\\n'"), std::string::npos) << r.err;
    r = run({baton_binary(), "--config", d.path(), "snapshot"});  // a directory
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
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
    // Live-only options mean nothing for a recording: refused, not ignored.
    expect_three({"diagnose", "--replay", d.path() + "/bad.jsonl", "--duration", "1m"}, "--duration");
    expect_three({"diagnose", "--replay", d.path() + "/bad.jsonl", "--no-gpus"}, "--no-gpus");
}

// Global options work after the subcommand too: the config named there is read (and its error
// names it), not "arguments were not expected".
TEST(Cli, GlobalOptionsAfterTheSubcommand) {
    baton::test::TempDir d;
    d.write("bad.toml", "[sample]\nproc_root = [\n");
    for (auto args : {std::vector<std::string>{"snapshot", "--config", d.path() + "/bad.toml"},
                      {"snapshot", "--no-gpus", "--config", d.path() + "/bad.toml", "--no-processes"},
                      {"runs", "show", "1", "--config", d.path() + "/bad.toml"},
                      {"run", "--config", d.path() + "/bad.toml", "--", "true"}}) {
        args.insert(args.begin(), baton_binary());
        auto r = run(args);
        EXPECT_EQ(r.exit_code, 1) << r.err;
        EXPECT_NE(r.err.find("bad.toml"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;
    }
}

// Misspelt commands and options are named, with the nearest spelling.
TEST(Cli, MisspellingsSuggestTheNearestName) {
    expect_usage_error({"snapshto"}, "unknown command 'snapshto' (did you mean 'snapshot'?)");
    expect_usage_error({"dignose"}, "unknown command 'dignose' (did you mean 'diagnose'?)");
    expect_usage_error({"snapshot", "--jsn"}, "unknown option '--jsn' for 'baton snapshot' (did you mean '--json'?)");
    expect_usage_error({"top", "--delya", "1"}, "unknown option '--delya' for 'baton top' (did you mean '--delay'?)");
    expect_usage_error({"runs", "shwo"}, "unknown command 'shwo' for 'baton runs' (did you mean 'show'?)");
    expect_usage_error({"help", "snapshto"}, "unknown command 'snapshto' (did you mean 'snapshot'?)");
    expect_usage_error({"frobnicate"}, "unknown command 'frobnicate'");
    expect_usage_error({"snapshot", "extra"}, "unexpected argument 'extra' for 'baton snapshot'");
    auto far = run({baton_binary(), "xyzzy"});
    EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;  // nothing near: no guess
}

// A queue command (`baton submit`, run thousands of times by a sweep's script) is parsed with only
// the queue's commands defined: each command's help, flags and errors are the same as with all of
// them (what `baton help NAME` shows), and the other commands are unaffected.
TEST(Cli, EveryCommandReadsTheSameWhetherAllOrOnlyItsGroupIsDefined) {
    auto pages = run({baton_binary(), "man", "--list"});
    ASSERT_EQ(pages.exit_code, 0);
    std::istringstream names(pages.out);
    int queue_commands = 0;
    for (std::string name; std::getline(names, name);) {
        if (name == "help" || name == "man" || name == "completion") continue;
        auto full = run({baton_binary(), "help", name});
        for (const std::vector<std::string>& args :
             {std::vector<std::string>{name, "--help"},
              std::vector<std::string>{"--config", "/dev/null", name, "--help"}}) {
            std::vector<std::string> argv{baton_binary()};
            argv.insert(argv.end(), args.begin(), args.end());
            auto own = run(argv);
            EXPECT_EQ(own.exit_code, 0) << name << ": " << own.err;
            EXPECT_EQ(own.out, full.out) << name;
        }
        for (const char* queue : {"submit", "queue", "show", "logs", "cancel", "wait", "hold", "release", "retry",
                                  "pause", "resume", "restart"})
            queue_commands += name == queue;
    }
    EXPECT_EQ(queue_commands, 12) << pages.out;
    expect_usage_error({"submit", "--bogus"}, "unknown option '--bogus' for 'baton submit'");
    expect_usage_error({"queue", "--jsn"}, "unknown option '--jsn' for 'baton queue' (did you mean '--json'?)");
    expect_usage_error({"show"}, "job is required");
    expect_usage_error({"cancel", "x"}, "x");
}

TEST(Cli, HelpForASubcommandNamesTheProgram) {
    for (const char* sub : {"top", "snapshot", "run", "runs"}) {
        auto r = run({baton_binary(), "help", sub});
        EXPECT_EQ(r.exit_code, 0);
        EXPECT_NE(r.out.find(std::string("Usage: baton ") + sub + " "), std::string::npos) << r.out;
    }
}

// Every flag that takes a time accepts the same words; a bad one is named with the forms.
TEST(Cli, DurationsInEveryFormEverywhere) {
    auto r = run(
        {baton_binary(), "snapshot", "--count", "2", "--interval", "300ms", "--json", "--no-processes", "--no-gpus"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2);
    EXPECT_GE(r.seconds, 0.3);
    for (const char* d : {"90", "90s", "1m30s", "5min", "2h", "30d"}) {  // parsed: it gets to opening the history
        auto r2 = run({baton_binary(), "runs", "prune", "--older-than", d, "--db", "/nonexistent/h.db"});
        EXPECT_NE(r2.err.find("no history at /nonexistent/h.db"), std::string::npos) << d << ": " << r2.err;
    }
    expect_usage_error({"top", "-d", "1m30x"}, "'1m30x' is not a duration");
    expect_usage_error({"top", "-d", "2h"}, "--delay: 7200 s is outside 0.1 s to 3600 s");
    expect_usage_error({"run", "--grace", "soon", "--", "true"}, "--grace");
    expect_usage_error({"run", "--interval", "5min", "--", "true"}, "--interval");
    expect_usage_error({"doctor", "--timeout", "1h"}, "--timeout");
    expect_usage_error({"snapshot", "--interval", "1e3"}, "not a duration");
    auto diag = run({baton_binary(), "diagnose", "--duration", "1m30x"});
    EXPECT_EQ(diag.exit_code, 3);  // diagnose's "could not judge"
    EXPECT_NE(diag.err.find("not a duration"), std::string::npos) << diag.err;
}

// A GPU that falls off the bus mid-run (the fake's GPU 1 answers GPU_IS_LOST from its second tick)
// is a critical finding, not a GPU every rule silently skips.
TEST(Cli, LostGpuIsACriticalFinding) {
    auto env = baton::test::fake_env("gpu-lost");
    auto r = run(
        {baton_binary(), "--config", "/dev/null", "diagnose", "--duration", "2", "--interval", "0.5", "--json"}, env);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;  // critical
    const std::size_t at = r.out.find("\"rule\":\"gpu_lost\"");
    ASSERT_NE(at, std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"subject\":\"gpu:1\"", at), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("dmesg", at), std::string::npos) << r.out;
    const auto doc = nlohmann::json::parse(r.out);
    for (const auto& f : doc["findings"]) EXPECT_NE(f["subject"], "gpu:0") << f;  // the healthy one is fine
}

// baton explain prints a rule's section of docs/findings.md from the copy built into the binary:
// the same text as the source tree's (so it never drifts), for every rule the engines can report.
TEST(Cli, ExplainPrintsTheCataloguesSection) {
    const std::string doc = baton::test::read_text(baton::test::source_dir() + "/docs/findings.md");
    auto list = run({baton_binary(), "explain"});
    ASSERT_EQ(list.exit_code, 0);
    std::size_t rules = 0;
    std::istringstream lines(list.out);
    for (std::string line; std::getline(lines, line); ++rules) {
        const std::string rule = line.substr(0, line.find(' '));
        auto r = run({baton_binary(), "explain", rule});
        ASSERT_EQ(r.exit_code, 0) << rule;
        const std::size_t at = doc.find("\n## " + rule + "\n");
        ASSERT_NE(at, std::string::npos) << rule;
        std::string section = doc.substr(at + 1, doc.find("\n## ", at + 1) - at - 1);
        while (!section.empty() && section.back() == '\n') section.pop_back();
        EXPECT_EQ(r.out, section + "\n") << rule;
    }
    EXPECT_GE(rules, 30u);  // the engine's rules, the failure scanner's and the Python hook's checks
    for (const char* rule : {"input_bound", "gpu_lost", "cuda_oom", "seeds_differ_across_ranks"})
        EXPECT_NE(list.out.find(std::string(rule) + " "), std::string::npos) << rule;
    expect_usage_error({"explain", "input_bond"}, "no rule 'input_bond' (did you mean 'input_bound'?)");
    // Diagnoses point at it.
    auto d = run({baton_binary(), "--config", "/dev/null", "diagnose", "--replay",
                  baton::test::source_dir() + "/tests/scenarios/input-bound.jsonl"});
    EXPECT_NE(d.out.find("see: baton explain input_bound"), std::string::npos) << d.out;
}

// Four snapshots of this machine, 0.2 s apart, as `baton snapshot --json` wrote them: the text and its lines.
static std::pair<std::string, std::vector<nlohmann::json>> four_snapshots() {
    auto rec = run({baton_binary(), "--config", "/dev/null", "snapshot", "--json", "--count", "4", "--interval", "0.2",
                    "--no-processes", "--no-gpus"});
    EXPECT_EQ(rec.exit_code, 0) << rec.err;
    std::vector<nlohmann::json> lines;
    std::istringstream in(rec.out);
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return {rec.out, lines};
}

// A recording during which NTP stepped the wall clock back is judged (ordered and measured by the
// monotonic clock); a file put together from two recordings (monotonic times going back) is refused.
TEST(Cli, RecordingsSurviveAClockStep) {
    const auto [recorded, lines] = four_snapshots();
    ASSERT_EQ(lines.size(), 4u);
    for (const auto& l : lines) ASSERT_TRUE(l.contains("monotonic_seconds")) << l;
    // The wall clock of the last two snapshots stepped an hour back.
    baton::test::TempDir d;
    std::string stepped;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        nlohmann::json l = lines[i];
        if (i >= 2) l["time"] = "2020-01-01T00:00:00.000Z";
        stepped += l.dump() + "\n";
    }
    d.write("stepped.jsonl", stepped);
    auto judged =
        run({baton_binary(), "--config", "/dev/null", "diagnose", "--replay", d.path() + "/stepped.jsonl", "--json"});
    EXPECT_LT(judged.exit_code, 3) << judged.err;
    const auto doc = nlohmann::json::parse(judged.out);
    EXPECT_NEAR(doc["window"]["seconds"].get<double>(), 0.6, 0.15);  // measured by the monotonic clock
    // Two recordings put together: the monotonic clock goes back at line 5.
    d.write("joined.jsonl", recorded + recorded);
    auto joined = run({baton_binary(), "--config", "/dev/null", "diagnose", "--replay", d.path() + "/joined.jsonl"});
    EXPECT_EQ(joined.exit_code, 3);
    EXPECT_NE(joined.err.find("joined.jsonl:5: snapshots must be in time order"), std::string::npos) << joined.err;
}

// A recording made before snapshots carried monotonic_seconds, across a wall-clock step, is ordered
// and measured by its interval_seconds; two such recordings joined are refused by the host's uptime
// going back; a file mixing both kinds is refused too.
TEST(Cli, OlderRecordingsSurviveAClockStep) {
    const auto [recorded, lines] = four_snapshots();
    ASSERT_EQ(lines.size(), 4u);
    double intervals = 0;
    std::string older, stepped;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        nlohmann::json l = lines[i];
        l.erase("monotonic_seconds");
        ASSERT_TRUE(l["host"].contains("uptime_seconds")) << l;
        if (i > 0) intervals += l["interval_seconds"].get<double>();
        older += l.dump() + "\n";
        if (i >= 2) l["time"] = "2020-01-01T00:00:00.000Z";  // the wall clock stepped back years
        stepped += l.dump() + "\n";
    }
    baton::test::TempDir d;
    d.write("stepped.jsonl", stepped);
    auto judged =
        run({baton_binary(), "--config", "/dev/null", "diagnose", "--replay", d.path() + "/stepped.jsonl", "--json"});
    ASSERT_LT(judged.exit_code, 3) << judged.err;
    const auto doc = nlohmann::json::parse(judged.out);
    EXPECT_NEAR(doc["window"]["seconds"].get<double>(), intervals, 0.01);
    EXPECT_NEAR(doc["window"]["seconds"].get<double>(), 0.6, 0.15);
    d.write("joined.jsonl", older + older);
    auto joined = run({baton_binary(), "--config", "/dev/null", "diagnose", "--replay", d.path() + "/joined.jsonl"});
    EXPECT_EQ(joined.exit_code, 3);
    EXPECT_NE(joined.err.find("joined.jsonl:5: snapshots must be in time order"), std::string::npos) << joined.err;
    d.write("mixed.jsonl", older + recorded);
    auto mixed = run({baton_binary(), "--config", "/dev/null", "diagnose", "--replay", d.path() + "/mixed.jsonl"});
    EXPECT_EQ(mixed.exit_code, 3);
    EXPECT_NE(mixed.err.find("mixed.jsonl:5: snapshots with and without monotonic_seconds"), std::string::npos)
        << mixed.err;
}

// Man pages and completions come from the one CLI definition: every option `baton help CMD` shows is
// in CMD's man page and in the bash completion; unknown shells and commands are errors.
TEST(Cli, ManPagesAndCompletionsFollowTheFlags) {
    auto bash = run({baton_binary(), "completion", "bash"});
    ASSERT_EQ(bash.exit_code, 0);
    EXPECT_NE(bash.out.find("complete -F _baton baton"), std::string::npos);
    for (const char* cmd :
         {"snapshot", "top", "diagnose", "doctor", "run", "runs", "compare", "report", "serve", "explain"}) {
        auto help = run({baton_binary(), "help", cmd});
        auto page = run({baton_binary(), "man", cmd});
        ASSERT_EQ(page.exit_code, 0) << cmd;
        std::string title = std::string(".TH BATON-") + cmd;
        for (char& c : title) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        EXPECT_NE(page.out.find(title + " 1"), std::string::npos) << page.out;
        // Each long option of the help text, in the page (roff escapes '-') and the completion.
        for (std::size_t at = help.out.find("--"); at != std::string::npos; at = help.out.find("--", at + 2)) {
            const std::size_t end = help.out.find_first_of(" ,=\n);:", at);
            const std::string opt = help.out.substr(at, end - at);
            if (opt.size() < 3) continue;
            std::string roff;
            for (char c : opt) roff += c == '-' ? std::string("\\-") : std::string(1, c);
            EXPECT_NE(page.out.find(roff), std::string::npos) << cmd << " man page lacks " << opt;
            EXPECT_NE(bash.out.find(opt), std::string::npos) << "bash completion lacks " << opt;
        }
    }
    EXPECT_NE(run({baton_binary(), "man"}).out.find(".TH BATON 1"), std::string::npos);
    EXPECT_NE(run({baton_binary(), "completion", "fish"})
                  .out.find("complete -c baton -n __fish_use_subcommand -a "
                            "snapshot"),
              std::string::npos);
    EXPECT_NE(run({baton_binary(), "completion", "zsh"}).out.find("#compdef baton"), std::string::npos);
    expect_usage_error({"completion", "tcsh"}, "shell");
    expect_usage_error({"man", "snapshto"}, "did you mean 'snapshot'");
}
