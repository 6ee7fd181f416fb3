#include "core/config.hpp"

#include <cstdlib>
#include <gtest/gtest.h>

#include "test_support.hpp"

using namespace baton;

TEST(Config, DefaultsWhenEmpty) {
    auto c = parse_config("", "test.toml");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->proc_root, "/proc");
    EXPECT_EQ(c->nvml_deadline_ms, 2000);
}

TEST(Config, ReadsKnownKeys) {
    auto c = parse_config(
        "[sample]\nproc_root = \"/x/proc\"\nsys_root = \"/x/sys\"\nskip_idle_processes = "
        "false\n[gpu]\nnvml_deadline_ms = 500\n"
        "nvml_library = \"/opt/libnvidia-ml.so.1\"\npcie_interval_seconds = 10\n",
        "test.toml");
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->proc_root, "/x/proc");
    EXPECT_EQ(c->sys_root, "/x/sys");
    EXPECT_EQ(c->nvml_deadline_ms, 500);
    EXPECT_EQ(c->nvml_library, "/opt/libnvidia-ml.so.1");
    EXPECT_DOUBLE_EQ(c->pcie_interval_seconds, 10);
    EXPECT_FALSE(c->skip_idle_processes);
    EXPECT_TRUE(parse_config("", "t")->skip_idle_processes);
}

TEST(Config, RejectsUnknownKeysTypesAndRanges) {
    EXPECT_FALSE(parse_config("[sample]\nproc_rot = \"/x\"\n", "t").ok());
    EXPECT_FALSE(parse_config("[nope]\n", "t").ok());
    EXPECT_FALSE(parse_config("top = 1\n", "t").ok());
    EXPECT_FALSE(parse_config("[gpu]\nnvml_deadline_ms = \"fast\"\n", "t").ok());
    EXPECT_FALSE(parse_config("[gpu]\nnvml_deadline_ms = 0\n", "t").ok());
    EXPECT_FALSE(parse_config("[gpu]\nnvml_deadline_ms = 1.5\n", "t").ok());
    EXPECT_FALSE(parse_config("[sample]\nproc_root = 3\n", "t").ok());
    EXPECT_FALSE(parse_config("[sample]\nskip_idle_processes = 1\n", "t").ok());
    EXPECT_FALSE(parse_config("[sample]\nskip_idle_processes = \"no\"\n", "t").ok());
}

TEST(Config, SyntaxErrorNamesFileAndLine) {
    auto c = parse_config("[sample]\nproc_root = \n", "my.toml");
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message.find("my.toml:2"), std::string::npos) << c.error().message;
    EXPECT_EQ(c.error().message.find('\n'), std::string::npos);
}

TEST(Config, MissingExplicitFileIsAnErrorMissingDefaultIsNot) {
    EXPECT_FALSE(load_config("/nonexistent/baton.toml").ok());
    test::TempDir home;
    setenv("XDG_CONFIG_HOME", home.path().c_str(), 1);
    unsetenv("BATON_CONFIG");
    EXPECT_TRUE(load_config("").ok());
    home.write("baton/config.toml", "[sample]\nproc_root = \"/elsewhere\"\n");
    auto c = load_config("");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->proc_root, "/elsewhere");
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
