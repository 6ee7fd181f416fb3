// The typed answers of the client's requests (queue/queue_calls): each parsed into fields, a
// refusal keeping the agent's code, and a hostile answer one error naming the field.
#include <gtest/gtest.h>

#include "queue/queue_calls.hpp"
#include "store/usage_records.hpp"

using namespace baton;
using namespace baton::queue;
using nlohmann::json;

TEST(QueueCalls, AListIsJobViews) {
    JobView a;
    a.id = 3;
    a.state = store::JobState::running;
    a.name = "train";
    JobView b;
    b.id = 4;
    b.state = store::JobState::held;
    const json answer = {{"ok", true}, {"jobs", {job_view_json(a), job_view_json(b)}}};
    Result<std::vector<JobView>> jobs = parse_job_list(answer);
    ASSERT_TRUE(jobs.ok()) << jobs.error().message;
    ASSERT_EQ(jobs->size(), 2u);
    EXPECT_EQ((*jobs)[0].name, "train");
    EXPECT_EQ((*jobs)[1].state, store::JobState::held);
    // A row of the wrong shape names the field and says whose answer it was.
    json bad = answer;
    bad["jobs"][1]["state"] = 7;
    Result<std::vector<JobView>> refused = parse_job_list(bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(refused.error().message.rfind("the agent's answer: ", 0), 0u) << refused.error().message;
    EXPECT_FALSE(parse_job_list(json{{"ok", true}}).ok());
    EXPECT_FALSE(parse_job_list(json{{"ok", true}, {"jobs", "none"}}).ok());
}

TEST(QueueCalls, ChangesAreWhatBecameOfEachJob) {
    const json answer = {{"ok", true},
                         {"jobs", {{{"id", 3}, {"state", "cancelling"}}, {{"id", 4}, {"state", "already done"}}}}};
    Result<std::vector<JobChange>> c = parse_job_changes(answer);
    ASSERT_TRUE(c.ok()) << c.error().message;
    ASSERT_EQ(c->size(), 2u);
    EXPECT_EQ((*c)[0].id, 3);
    EXPECT_EQ((*c)[1].outcome, "already done");
    EXPECT_FALSE(parse_job_changes(json{{"jobs", {{{"id", "3"}, {"state", "held"}}}}}).ok());
    EXPECT_FALSE(parse_job_changes(json{{"jobs", {{{"id", 3}}}}}).ok());
}

TEST(QueueCalls, ALogChunkAndWhereTheNextStarts) {
    Result<LogChunk> c = parse_log_chunk(
        json{{"ok", true}, {"offset", 10}, {"size", 25}, {"ended", false}, {"data", std::string("epoch 1\n\xff")}});
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->offset, 10u);
    EXPECT_EQ(c->size, 25u);
    EXPECT_FALSE(c->ended);
    EXPECT_EQ(c->data, "epoch 1\n\xff");  // bytes, as the job wrote them
    Result<LogChunk> empty = parse_log_chunk(json{{"offset", 0}, {"size", 0}, {"ended", true}});
    ASSERT_TRUE(empty.ok());
    EXPECT_TRUE(empty->data.empty());
    EXPECT_FALSE(parse_log_chunk(json{{"offset", -1}, {"size", 0}, {"ended", true}}).ok());
    EXPECT_FALSE(parse_log_chunk(json{{"offset", 0}, {"size", 0}}).ok());
}

TEST(QueueCalls, ASubmitAnswerOrTheRefusalWithItsCode) {
    Result<Submitted> s = parse_submit_reply(Reply{R"({"ok":true,"id":12,"state":"queued"})", ""});
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->id, 12);
    EXPECT_EQ(s->state, store::JobState::queued);
    Result<Submitted> refused =
        parse_submit_reply(Reply{R"({"ok":false,"error":"no GPU 9 on this machine","code":"invalid_argument"})", ""});
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(refused.error().message, "no GPU 9 on this machine");
    // An older agent without codes: failed, with its text.
    Result<Submitted> old = parse_submit_reply(Reply{R"({"ok":false,"error":"refused"})", ""});
    ASSERT_FALSE(old.ok());
    EXPECT_EQ(old.error().code, ErrorCode::failed);
    EXPECT_FALSE(parse_submit_reply(Reply{"not json", ""}).ok());
    EXPECT_FALSE(parse_submit_reply(Reply{R"({"ok":true,"id":12,"state":"paused"})", ""}).ok());
    EXPECT_FALSE(parse_submit_reply(Reply{R"([1,2])", ""}).ok());
}

TEST(QueueCalls, AnArraysIdsAndTheGroups) {
    Result<Submitted> s =
        parse_submit_reply(Reply{R"({"ok":true,"id":12,"ids":[12,13,14],"array":12,"state":"queued"})", ""});
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->ids, (std::vector<std::int64_t>{12, 13, 14}));
    EXPECT_FALSE(parse_submit_reply(Reply{R"({"ok":true,"id":12,"ids":[12,"x"],"state":"queued"})", ""}).ok());
    EXPECT_FALSE(parse_submit_reply(Reply{R"({"ok":true,"id":12,"ids":12,"state":"queued"})", ""}).ok());

    auto groups = parse_groups(nlohmann::json::parse(
        R"({"ok":true,"groups":[{"name":"serial","parallel":1,"owner":"ada","running":1,"waiting":2}]})"));
    ASSERT_TRUE(groups.ok()) << groups.error().message;
    ASSERT_EQ(groups->size(), 1u);
    EXPECT_EQ((*groups)[0].name, "serial");
    EXPECT_EQ((*groups)[0].owner, "ada");
    EXPECT_EQ((*groups)[0].parallel, 1u);
    EXPECT_EQ((*groups)[0].running, 1u);
    EXPECT_EQ((*groups)[0].waiting, 2u);
    for (const char* bad : {R"({"ok":true})", R"({"groups":{}})", R"({"groups":[1]})",
                            R"({"groups":[{"name":"a","owner":"b","parallel":-1,"running":0,"waiting":0}]})",
                            R"({"groups":[{"name":"a","owner":"b","parallel":1,"running":0}]})",
                            R"({"groups":[{"name":7,"owner":"b","parallel":1,"running":0,"waiting":0}]})"})
        EXPECT_FALSE(parse_groups(nlohmann::json::parse(bad)).ok()) << bad;
}

TEST(QueueCalls, UsageAnswersAreReadWholeOrRefused) {
    baton::store::UsageRecord r;
    r.label = "queue:7";
    r.kind = "queue";
    r.job = "7";
    r.user = "ada";
    r.start_ms = 1000;
    r.end_ms = 9000;
    r.ended = true;
    r.seconds = 8;
    r.gpus = 2;
    r.gpu_seconds = 16;
    r.gpu_busy_seconds = 12;
    r.cpus = 4;
    r.cpu_seconds_allocated = 32;
    r.cpu_seconds = 3.5;
    r.memory_peak_bytes = 1u << 30;
    nlohmann::json answer = {{"ok", true}, {"jobs", {baton::store::usage_json(r)}}};
    auto got = parse_usage(answer);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0], r);
    for (auto [key, value] : {std::pair<const char*, nlohmann::json>{"gpu_seconds", -1},
                              {"gpu_busy_seconds", "12"},
                              {"gpus", -2},
                              {"cpus", 1.5},
                              {"start_ms", "x"},
                              {"label", 7},
                              {"ended", 1}}) {
        nlohmann::json bad = answer;
        bad["jobs"][0][key] = value;
        auto refused = parse_usage(bad);
        ASSERT_FALSE(refused.ok()) << key;
        EXPECT_NE(refused.error().message.find(key), std::string::npos) << refused.error().message;
    }
    nlohmann::json missing = answer;
    missing["jobs"][0].erase("seconds");
    EXPECT_FALSE(parse_usage(missing).ok());
    EXPECT_FALSE(parse_usage(nlohmann::json{{"ok", true}}).ok());
    EXPECT_FALSE(parse_usage(nlohmann::json{{"jobs", 3}}).ok());
}
