// The --profile window's trace taken back: only a regular file directly in the run's profile
// directory (the hook's socket takes anyone's datagrams), gzipped or not, judged; and why a run got
// no window.
#include "run/profile_window.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include "core/run_program.hpp"
#include "profile/trace_builder.hpp"
#include "test_support.hpp"

using baton::run::no_profile_note;
using baton::run::profile_environment;
using baton::run::ProfileRequest;
using baton::run::take_profile;

namespace {

std::string starved() {
    baton::test::TraceBuilder b;
    b.step(1, 0, 1000)
        .op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 400, 1, "user_annotation")
        .kernel("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn", 410, 420, 500);
    return b.json();
}

}  // namespace

TEST(ProfileWindow, TheHooksTraceIsTakenGzippedAndJudged) {
    baton::test::TempDir d;
    d.write("profile/trace-7.json", starved());
    ASSERT_EQ(baton::run_program({"/bin/gzip", d.path() + "/profile/trace-7.json"}, "", 30)->exit_status, 0);
    ProfileRequest r;
    auto t = take_profile(d.path() + "/profile", d.path() + "/profile/trace-7.json.gz", r);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(static_cast<unsigned char>(t->trace_gz[0]), 0x1f) << "the bytes as the hook wrote them";
    ASSERT_EQ(t->analysis.steps.size(), 1u);
    ASSERT_EQ(t->findings.size(), 1u);
    EXPECT_EQ(t->findings[0].rule, "data_in_step");
}

TEST(ProfileWindow, OnlyARegularFileDirectlyInTheDirectory) {
    baton::test::TempDir d;
    d.write("profile/ok.json", starved());
    d.write("elsewhere.json", starved());
    d.write("profile/sub/deep.json", starved());
    ASSERT_EQ(symlink((d.path() + "/elsewhere.json").c_str(), (d.path() + "/profile/link.json").c_str()), 0);
    const std::string dir = d.path() + "/profile";
    ProfileRequest r;
    EXPECT_TRUE(take_profile(dir, dir + "/ok.json", r).ok());
    for (const std::string& bad :
         {d.path() + "/elsewhere.json", dir + "/../elsewhere.json", dir + "/sub/deep.json", dir + "/link.json",
          dir + "/sub", dir + "/", dir + "/missing.json.gz", dir + "x/a"}) {
        auto t = take_profile(dir, bad, r);
        EXPECT_FALSE(t.ok()) << bad;
        if (!t.ok()) {
            EXPECT_EQ(t.error().message.find('\n'), std::string::npos) << t.error().message;
        }
    }
    d.write("profile/garbage.json.gz", "\x1f\x8b not really gzip");
    auto g = take_profile(dir, dir + "/garbage.json.gz", r);
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message.find("gzip"), std::string::npos) << g.error().message;
}

TEST(ProfileWindow, TheHooksVariablesAndWhyThereIsNoWindow) {
    ProfileRequest r;
    r.warmup = 4;
    r.steps = 3;
    const auto env = profile_environment("/run/x/profile", r);
    ASSERT_EQ(env.size(), 3u);
    EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"BATON_PROFILE_DIR", "/run/x/profile"}));
    EXPECT_EQ(env[1].second, "4");
    EXPECT_EQ(env[2].second, "3");
    EXPECT_NE(no_profile_note(0, r).find("baton.torch.watch"), std::string::npos);
    EXPECT_NE(no_profile_note(6, r).find("after 6 step(s), before the window's 8"), std::string::npos)
        << no_profile_note(6, r);
}

TEST(ProfileWindow, AutoWaitsForItsTriggerWhichAFindingAProfileExplainsPulls) {
    ProfileRequest r;
    r.automatic = true;
    r.warmup = 10;
    const auto env = profile_environment("/run/x/profile", r);
    ASSERT_EQ(env.size(), 4u);
    EXPECT_EQ(env[1].second, "0") << "no warm-up of its own: the run has been going";
    EXPECT_EQ(env[3], (std::pair<std::string, std::string>{"BATON_PROFILE_TRIGGER", "/run/x/profile/start"}));
    baton::diagnose::Finding f;
    for (const char* rule : {"gpu_underused", "step_time_unstable", "input_bound"}) {
        f.rule = rule;
        EXPECT_TRUE(baton::run::explained_by_profile(f)) << rule;
    }
    for (const char* rule : {"swap_active", "data_in_step", "cuda_oom"}) {
        f.rule = rule;
        EXPECT_FALSE(baton::run::explained_by_profile(f)) << rule;
    }
    baton::test::TempDir d;
    EXPECT_TRUE(baton::run::trigger_profile_window(d.path()).ok());
    EXPECT_EQ(access((d.path() + "/start").c_str(), F_OK), 0);
    EXPECT_FALSE(baton::run::trigger_profile_window(d.path()).ok()) << "once";
    EXPECT_NE(no_profile_note(500, r, false).find("no finding a profile explains"), std::string::npos);
    EXPECT_NE(no_profile_note(500, r, true).find("ended before its window's 6 steps"), std::string::npos);
}

TEST(ProfileWindow, AutoAlsoStartsOnABusyGpuWhoseSmsIdle) {
    auto window = [](std::size_t n, std::optional<double> util, std::optional<double> sm) {
        baton::diagnose::Window w(n);
        for (baton::Snapshot& s : w) {
            baton::GpuInfo g;
            g.index = 1;
            g.utilization_percent = util;
            g.sm_activity_percent = sm;
            s.gpus.push_back(g);
        }
        return w;
    };
    const baton::Thresholds t;  // gpu_busy_percent 80
    EXPECT_EQ(baton::run::busy_gpu_with_idle_sms(window(6, 95, 20), {1}, t),
              "GPU1 is 95 % busy but its SMs 20 % active");
    EXPECT_EQ(baton::run::busy_gpu_with_idle_sms(window(6, 95, 70), {1}, t), "") << "SMs busy too";
    EXPECT_EQ(baton::run::busy_gpu_with_idle_sms(window(6, 40, 20), {1}, t), "") << "not busy";
    EXPECT_EQ(baton::run::busy_gpu_with_idle_sms(window(6, 95, std::nullopt), {1}, t), "") << "no SM activity read";
    EXPECT_EQ(baton::run::busy_gpu_with_idle_sms(window(4, 95, 20), {1}, t), "") << "too few samples";
    EXPECT_EQ(baton::run::busy_gpu_with_idle_sms(window(6, 95, 20), {0}, t), "") << "not the job's GPU";
}
