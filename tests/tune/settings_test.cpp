#include "tune/settings.hpp"

#include <gtest/gtest.h>

using namespace baton::tune;

TEST(TuneSettings, JsonRoundTripsEveryField) {
    Settings s;
    s.num_workers = 4;
    s.pin_memory = true;
    s.persistent_workers = false;
    s.prefetch_factor = 4;
    s.batch_size = 64;
    s.threads = 2;
    s.cudnn_benchmark = true;
    s.tf32 = true;
    s.autocast = "bfloat16";
    s.expandable_segments = true;
    const std::string text = to_json(s);
    auto back = settings_from_json(text);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, s) << text;
    EXPECT_EQ(to_json(Settings{}), "{}");
}

TEST(TuneSettings, HostileJsonIsRefusedNamingTheKey) {
    for (const char* bad : {"", "[]", "{\"num_workers\":-1}", "{\"num_workers\":1.5}", "{\"num_workers\":\"4\"}",
                            "{\"pin_memory\":1}", "{\"autocast\":\"float8\"}", "{\"threads\":0}", "{\"surprise\":1}",
                            "{\"batch_size\":99999999999}", "{\"num_workers\":4"}) {
        auto r = settings_from_json(bad);
        EXPECT_FALSE(r.ok()) << bad;
    }
    EXPECT_NE(settings_from_json("{\"surprise\":1}").error().message.find("surprise"), std::string::npos);
    EXPECT_NE(settings_from_json("{\"threads\":0}").error().message.find("'threads'"), std::string::npos);
}

TEST(TuneSettings, LabelsPasteLinesAndEnvironment) {
    Settings s;
    EXPECT_EQ(label(s), "your settings");
    EXPECT_EQ(changed_count(s), 0u);
    EXPECT_TRUE(settings_environment(s, std::nullopt).empty());
    s.num_workers = 4;
    s.pin_memory = true;
    EXPECT_EQ(label(s), "num_workers=4 pin_memory=True");
    EXPECT_EQ(changed_count(s), 2u);
    const auto lines = paste_lines(s);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0], "DataLoader(dataset, ..., num_workers=4, pin_memory=True)");
    s.expandable_segments = true;
    const auto env = settings_environment(s, std::string("max_split_size_mb:128"));
    ASSERT_EQ(env.size(), 2u);
    EXPECT_EQ(env[0].first, "BATON_TUNE");
    EXPECT_EQ(env[1], (std::pair<std::string, std::string>{"PYTORCH_CUDA_ALLOC_CONF",
                                                           "max_split_size_mb:128,expandable_segments:True"}));
    EXPECT_FALSE(changes_numerics(s));
    s.autocast = "bfloat16";
    EXPECT_TRUE(changes_numerics(s));
    EXPECT_FALSE(changes_optimisation(s));
    Settings t;
    t.num_workers = 8;
    EXPECT_EQ(*s.merged(t).num_workers, 8);
    EXPECT_EQ(*s.merged(t).pin_memory, true);
}
