#include "core/config.hpp"

#include <cstdlib>
#include <gtest/gtest.h>

#include "test_support.hpp"

using namespace baton;

TEST(Config, DefaultsWhenEmpty) {
    auto c = parse_config("", "test.toml");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->sample.proc_root, "/proc");
    EXPECT_EQ(c->gpu.nvml_deadline_ms, 2000);
}

TEST(Config, ReadsKnownKeys) {
    auto c = parse_config(
        "[sample]\nproc_root = \"/x/proc\"\nsys_root = \"/x/sys\"\nskip_idle_processes = "
        "false\n[gpu]\nnvml_deadline_ms = 500\n"
        "nvml_library = \"/opt/libnvidia-ml.so.1\"\npcie_interval_seconds = 10\n",
        "test.toml");
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->sample.proc_root, "/x/proc");
    EXPECT_EQ(c->sample.sys_root, "/x/sys");
    EXPECT_EQ(c->gpu.nvml_deadline_ms, 500);
    EXPECT_EQ(c->gpu.nvml_library, "/opt/libnvidia-ml.so.1");
    EXPECT_DOUBLE_EQ(c->gpu.pcie_interval_seconds, 10);
    EXPECT_FALSE(c->sample.skip_idle_processes);
    EXPECT_TRUE(parse_config("", "t")->sample.skip_idle_processes);
    EXPECT_EQ(parse_config("[history]\ndb = \"/data/baton.db\"\n", "t")->history.db, "/data/baton.db");
    EXPECT_EQ(parse_config("", "t")->history.db, "");
}

TEST(Config, RejectsUnknownKeysTypesAndRanges) {
    EXPECT_FALSE(parse_config("[sample]\nproc_rot = \"/x\"\n", "t").ok());
    EXPECT_FALSE(parse_config("[nope]\n", "t").ok());
    EXPECT_FALSE(parse_config("top = 1\n", "t").ok());
    EXPECT_FALSE(parse_config("[gpu]\nnvml_deadline_ms = \"fast\"\n", "t").ok());
    EXPECT_FALSE(parse_config("[gpu]\nnvml_deadline_ms = 0\n", "t").ok());
    EXPECT_FALSE(parse_config("[gpu]\nnvml_deadline_ms = 1.5\n", "t").ok());
    // Floats never become integers (1e50 as an int64 is undefined), nan is no number in range.
    EXPECT_EQ(parse_config("[gpu]\nnvml_deadline_ms = 1e50\n", "t").error().message,
              "t:2: 'gpu.nvml_deadline_ms' must be an integer from 10 to 600000");
    EXPECT_FALSE(parse_config("[gpu]\npcie_interval_seconds = nan\n", "t").ok());
    EXPECT_FALSE(parse_config("[gpu]\npcie_interval_seconds = inf\n", "t").ok());
    EXPECT_FALSE(parse_config("[thresholds]\ngpu_idle_percent = nan\n", "t").ok());
    // Text that is not UTF-8 is refused before the TOML parser sees it (toml++ 3.3.0 can abort on it).
    EXPECT_EQ(parse_config("[sample]\n\nproc_root = \"\xff\"\n", "t").error().message,
              "t:3: not UTF-8 text (byte 0xFF)");
    EXPECT_FALSE(parse_config("# \xed\xa0\x80 surrogate\n", "t").ok());
    EXPECT_FALSE(parse_config("x = \"\xf5\x80\x80\x80\"", "t").ok());
    EXPECT_TRUE(parse_config("# caf\xc3\xa9 \xe4\xbd\xa0\n", "t").ok());
    // Non-ASCII text only where toml++ 3.3.0 reads it safely (its issue 295, found by fuzzing):
    // comments and one-line string values; a path may hold any UTF-8.
    EXPECT_EQ(parse_config("[history]\ndb = \"/home/jos\xc3\xa9/baton.db\"  # \xe2\x9c\x93\n", "t")->history.db,
              "/home/jos\xc3\xa9/baton.db");
    for (const char* bad : {"[thresholds]\ngcssa\xd0\x88pu = 1\n", "\"\xd0\x88\" = 1\n", "x = \"\"\"a\xd0\x88\"\"\"\n",
                            "\"\"=-\"\"y=\"-g\xef\xbb\xb7\"", "x = [\"\xd0\x88\"]\n"})
        EXPECT_NE(parse_config(bad, "t").error().message.find("non-ASCII text is allowed only"), std::string::npos)
            << bad;
    EXPECT_FALSE(parse_config("[sample]\nproc_root = 3\n", "t").ok());
    EXPECT_FALSE(parse_config("[sample]\nskip_idle_processes = 1\n", "t").ok());
    EXPECT_FALSE(parse_config("[sample]\nskip_idle_processes = \"no\"\n", "t").ok());
    EXPECT_EQ(parse_config("[history]\ndb = \"\"\n", "t.toml").error().message,
              "t.toml:2: 'history.db' must be a path, not empty");
    EXPECT_EQ(parse_config("[history]\ndb = 5\n", "t.toml").error().message, "t.toml:2: 'history.db' must be a string");
    EXPECT_EQ(parse_config("[history]\npath = \"x\"\n", "t.toml").error().message,
              "t.toml:2: unknown key 'history.path'");
}

TEST(Config, SyntaxErrorNamesFileAndLine) {
    auto c = parse_config("[sample]\nproc_root = \n", "my.toml");
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message.find("my.toml:2"), std::string::npos) << c.error().message;
    EXPECT_EQ(c.error().message.find('\n'), std::string::npos);
}

TEST(Config, MissingExplicitFileIsAnErrorMissingDefaultIsNot) {
    test::TempDir home;
    setenv("BATON_SYSTEM_CONFIG", (home.path() + "/no-system.toml").c_str(), 1);
    setenv("XDG_CONFIG_HOME", home.path().c_str(), 1);
    unsetenv("BATON_CONFIG");
    EXPECT_FALSE(load_config("/nonexistent/baton.toml").ok());
    EXPECT_TRUE(load_config("").ok());
    // A directory is no config file (it used to read as an empty one).
    EXPECT_EQ(load_config(home.path()).error().message,
              "config file " + home.path() + " is a directory (give the file, e.g. " + home.path() + "/config.toml)");
    home.write("huge.toml", "# " + std::string(2 << 20, 'x') + "\n");
    EXPECT_EQ(load_config(home.path() + "/huge.toml").error().message,
              "config file " + home.path() + "/huge.toml is larger than 1 MiB or cannot be read");
    // Read in pieces: a key after 900 KB of comments is read, one byte past 1 MiB is refused.
    const std::string comments = "# " + std::string(900 * 1024, 'c') + "\n";
    home.write("long.toml", comments + "[sample]\nproc_root = \"/far\"\n");
    Result<Config> far = load_config(home.path() + "/long.toml");
    ASSERT_TRUE(far.ok()) << far.error().message;
    EXPECT_EQ(far->sample.proc_root, "/far");
    home.write("edge.toml", "#" + std::string((1 << 20) - 2, 'e') + "\n");
    EXPECT_TRUE(load_config(home.path() + "/edge.toml").ok());
    home.write("over.toml", "#" + std::string((1 << 20) - 1, 'e') + "\n");
    EXPECT_FALSE(load_config(home.path() + "/over.toml").ok());
    home.write("baton/baton.toml", "[sample]\nproc_root = \"/elsewhere\"\n");
    auto c = load_config("");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->sample.proc_root, "/elsewhere");
}

TEST(Config, LayersSystemThenUserThenExplicit) {
    test::TempDir d;
    d.write("etc/baton.toml",
            "[sample]\nproc_root = \"/system\"\n[thresholds]\ncpu_alarm_percent = 85\n"
            "iowait_alarm_percent = 7\n");
    d.write("xdg/baton/baton.toml", "[thresholds]\ncpu_alarm_percent = 90\n");
    d.write("mine.toml", "[thresholds]\niowait_alarm_percent = 9\n");
    setenv("BATON_SYSTEM_CONFIG", (d.path() + "/etc/baton.toml").c_str(), 1);
    setenv("XDG_CONFIG_HOME", (d.path() + "/xdg").c_str(), 1);
    unsetenv("BATON_CONFIG");
    auto c = load_config(d.path() + "/mine.toml");
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->sample.proc_root, "/system");                     // only the system file sets it
    EXPECT_DOUBLE_EQ(c->thresholds.cpu_alarm_percent, 90);         // the user's file wins over the system's
    EXPECT_DOUBLE_EQ(c->thresholds.iowait_alarm_percent, 9);       // the explicit file wins over both
    setenv("BATON_CONFIG", (d.path() + "/mine.toml").c_str(), 1);  // the same through the environment
    EXPECT_DOUBLE_EQ(load_config("")->thresholds.iowait_alarm_percent, 9);
    unsetenv("BATON_CONFIG");
    // A broken layer is an error naming that file, the line and the key.
    d.write("xdg/baton/baton.toml", "# tuned for the A100 boxes\n[thresholds]\ncpu_alarm_percent = 200\n");
    auto bad = load_config("");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message, d.path() +
                                       "/xdg/baton/baton.toml:3: 'thresholds.cpu_alarm_percent' must be a number "
                                       "from 0 to 100");
    unsetenv("BATON_SYSTEM_CONFIG");
    unsetenv("XDG_CONFIG_HOME");
}

TEST(Config, ThresholdsFromTheIndicatorTable) {
    auto d = parse_config("", "t");
    ASSERT_TRUE(d.ok());
    EXPECT_DOUBLE_EQ(d->thresholds.gpu_memory_alarm_percent, 90);
    EXPECT_DOUBLE_EQ(d->thresholds.cpu_alarm_percent, 80);
    EXPECT_DOUBLE_EQ(d->thresholds.swap_alarm_bytes_per_second, 1e6);
    EXPECT_DOUBLE_EQ(d->thresholds.iowait_alarm_percent, 5);
    auto c = parse_config(
        "[thresholds]\ngpu_memory_alarm_percent = 95\ncpu_best_max_percent = 60.5\nwindow_seconds = 10\n", "t");
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_DOUBLE_EQ(c->thresholds.gpu_memory_alarm_percent, 95);
    EXPECT_DOUBLE_EQ(c->thresholds.cpu_best_max_percent, 60.5);
    EXPECT_DOUBLE_EQ(c->thresholds.window_seconds, 10);
}

TEST(Config, BadThresholdsNameTheKey) {
    auto expect_error = [](const std::string& text, const std::string& needle) {
        auto c = parse_config(text, "baton.toml");
        ASSERT_FALSE(c.ok()) << text;
        EXPECT_NE(c.error().message.find(needle), std::string::npos) << c.error().message;
        EXPECT_NE(c.error().message.find("baton.toml"), std::string::npos);
        EXPECT_EQ(c.error().message.find('\n'), std::string::npos);
    };
    expect_error("[thresholds]\ngpu_memory_alarm_percent = 101\n", "thresholds.gpu_memory_alarm_percent");
    expect_error("[thresholds]\ncpu_alarm_percent = \"high\"\n", "thresholds.cpu_alarm_percent");
    expect_error("[thresholds]\nsustained_share = 0\n", "thresholds.sustained_share");
    expect_error("[thresholds]\nswap_alarm = 1\n", "thresholds.swap_alarm");
    expect_error("[thresholds]\ncpu_best_max_percent = 90\n", "thresholds.cpu_best_max_percent must not exceed");
    expect_error("[thresholds]\ngpu_memory_best_min_percent = 88\n", "gpu_memory_best_min_percent");
}

TEST(Config, TopGraphsSymbolsAndHistory) {
    Config d = *parse_config("", "t");
    EXPECT_TRUE(d.top.graphs);
    EXPECT_EQ(d.top.graph_symbols, "braille");
    EXPECT_EQ(d.top.history_seconds, 600);
    Config c = *parse_config("[top]\ngraphs = false\ngraph_symbols = \"block\"\nhistory = \"30m\"\n", "t");
    EXPECT_FALSE(c.top.graphs);
    EXPECT_EQ(c.top.graph_symbols, "block");
    EXPECT_EQ(c.top.history_seconds, 1800);
    EXPECT_EQ(parse_config("[top]\ngraph_symbols = \"dots\"\n", "t").error().message,
              "t:2: 'top.graph_symbols' must be \"braille\" or \"block\"");
    EXPECT_EQ(parse_config("[top]\nhistory = \"2h\"\n", "t").error().message,
              "t:2: 'top.history' must be a duration from 1m to 1h, e.g. \"10m\"");
    EXPECT_FALSE(parse_config("[top]\nhistory = 600\n", "t").ok());
    EXPECT_FALSE(parse_config("[top]\ngraphs = \"yes\"\n", "t").ok());
    EXPECT_EQ(parse_config("[top]\ngraph = true\n", "t").error().message, "t:2: unknown key 'top.graph'");
    // Columns: a list or one string; baton top checks the names themselves.
    EXPECT_EQ(parse_config("[top]\ncolumns = [\"user\", \"age\"]\n", "t")->top.columns, "user,age");
    EXPECT_EQ(parse_config("[top]\ncolumns = \"cpu,rss\"\n", "t")->top.columns, "cpu,rss");
    EXPECT_FALSE(parse_config("[top]\ncolumns = []\n", "t").ok());
    EXPECT_FALSE(parse_config("[top]\ncolumns = [1, 2]\n", "t").ok());
    EXPECT_FALSE(parse_config("[top]\ncolumns = [\"a,b\"]\n", "t").ok());
}

TEST(Config, ServeAllowedHostsAndLaunchLogGroup) {
    Config d = *parse_config("", "t");
    EXPECT_TRUE(d.serve.allowed_hosts.empty());
    EXPECT_TRUE(d.launch.log_group.empty());
    Config c = *parse_config(
        "[serve]\nallowed_hosts = [\"Gpu-01\", \"gpu-01.lan\", \"[fd00::1]\"]\n"
        "[launch]\nlog_group = \"ml\"\n",
        "t");
    EXPECT_EQ(c.serve.allowed_hosts, (std::vector<std::string>{"gpu-01", "gpu-01.lan", "[fd00::1]"}));
    EXPECT_EQ(c.launch.log_group, "ml");
    for (const char* bad : {"allowed_hosts = \"gpu-01\"", "allowed_hosts = [\"\"]", "allowed_hosts = [\"a b\"]",
                            "allowed_hosts = [\"evil/x\"]", "allowed_hosts = [1]"})
        EXPECT_NE(parse_config(std::string("[serve]\n") + bad + "\n", "t")
                      .error()
                      .message.find("t:2: 'serve.allowed_hosts' must be a list of host names"),
                  std::string::npos)
            << bad;
    EXPECT_EQ(parse_config("[launch]\nlog_group = \"\"\n", "t").error().message,
              "t:2: 'launch.log_group' must name a group");
    EXPECT_EQ(parse_config("[launch]\nlog_dir = \"x\"\n", "t").error().message, "t:2: unknown key 'launch.log_dir'");
}
