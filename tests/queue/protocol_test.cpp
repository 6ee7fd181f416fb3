// What is said over the queue's socket: every request survives its round trip (arguments that are
// not UTF-8 included), and hostile lines get one clear error each.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "queue/protocol.hpp"

using namespace baton::queue;

TEST(QueueProtocol, SubmitRoundTripsArgumentsAndEnvironmentAsBytes) {
    Request r;
    r.op = Op::submit;
    r.submit.name = "resnet";
    r.submit.argv = {"python3", "train.py", "--tag", "caf\xe9", "two words", ""};
    r.submit.cwd = "/home/ada/runs";
    r.submit.env = {{"PATH", "/usr/bin"}, {"WEIRD", "a=b=c"}, {"EMPTY", ""}};
    r.submit.request.want.gpus = 2;
    r.submit.request.want.cpus = 8;
    r.submit.request.retries = 3;
    r.submit.request.on_oom = OnOom::retry;
    r.submit.priority = -5;
    r.submit.after = {3, 4};
    r.submit.after_ok = true;
    r.submit.hold = true;
    const std::string line = request_line(r);
    ASSERT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1);  // one line
    baton::Result<Request> back = parse_request(line.substr(0, line.size() - 1));
    ASSERT_TRUE(back.ok()) << back.error().message;
    const Submission& s = back->submit;
    EXPECT_EQ(back->op, Op::submit);
    EXPECT_EQ(s.name, "resnet");
    EXPECT_EQ(s.argv, r.submit.argv);
    EXPECT_EQ(s.cwd, "/home/ada/runs");
    EXPECT_EQ(s.env, r.submit.env);
    EXPECT_EQ(s.request.want.gpus, 2u);
    EXPECT_EQ(s.request.want.cpus, 8u);
    EXPECT_EQ(s.request.retries, 3u);
    EXPECT_EQ(s.request.on_oom, OnOom::retry);
    EXPECT_EQ(s.priority, -5);
    EXPECT_EQ(s.after, (std::vector<std::int64_t>{3, 4}));
    EXPECT_TRUE(s.after_ok);
    EXPECT_TRUE(s.hold);
}

TEST(QueueProtocol, EveryOtherRequestRoundTrips) {
    for (Op op : {Op::list, Op::show, Op::cancel, Op::hold, Op::release, Op::retry, Op::wait, Op::logs, Op::pause,
                  Op::resume, Op::restart}) {
        Request r;
        r.op = op;
        r.jobs = {42};
        if (op == Op::cancel) {
            r.jobs = {42, 43};
            r.grace_seconds = 2.5;
        }
        r.all = op == Op::list;
        r.stderr_stream = op == Op::logs;
        r.offset = op == Op::logs ? 1000 : 0;
        baton::Result<Request> back = parse_request(request_line(r));
        ASSERT_TRUE(back.ok()) << op_name(op) << ": " << back.error().message;
        EXPECT_EQ(back->op, op);
        if (op != Op::list) {
            EXPECT_EQ(back->jobs, r.jobs) << op_name(op);
        }
        EXPECT_EQ(back->all, r.all);
        EXPECT_EQ(back->stderr_stream, r.stderr_stream);
        EXPECT_EQ(back->offset, r.offset);
        if (op == Op::cancel) {
            EXPECT_DOUBLE_EQ(back->grace_seconds, 2.5);
        }
    }
}

TEST(QueueProtocol, CleanSaysWhichEndedJobs) {
    Request r;
    r.op = Op::clean;
    r.successful_only = true;
    baton::Result<Request> back = parse_request(request_line(r));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->op, Op::clean);
    EXPECT_TRUE(back->successful_only);
    EXPECT_FALSE(parse_request("{\"op\": \"clean\", \"successful_only\": 1}").ok());
    EXPECT_FALSE(parse_request("{\"op\": \"clean\"}")->successful_only);
}

TEST(QueueProtocol, HostileLinesGetOneLineErrors) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "one JSON object"},
        {"[1,2]", "one JSON object"},
        {"{\"op\": 7}", "no \"op\""},
        {"{\"op\": \"format\"}", "no request \"format\""},
        {"{\"op\": \"show\"}", "\"job\""},
        {"{\"op\": \"show\", \"job\": -1}", "\"job\""},
        {"{\"op\": \"show\", \"job\": \"12\"}", "\"job\""},
        {"{\"op\": \"show\", \"job\": 1.5}", "\"job\""},
        {"{\"op\": \"pause\"}", "\"job\""},
        {"{\"op\": \"resume\", \"job\": 0}", "\"job\""},
        {"{\"op\": \"cancel\", \"jobs\": []}", "\"jobs\""},
        {"{\"op\": \"cancel\", \"jobs\": [1, 0]}", "\"jobs\""},
        {"{\"op\": \"cancel\", \"jobs\": [1], \"grace_seconds\": -1}", "grace_seconds"},
        {"{\"op\": \"cancel\", \"jobs\": [1], \"grace_seconds\": 1e300}", "grace_seconds"},
        {"{\"op\": \"logs\", \"job\": 1, \"stream\": \"stdin\"}", "stream"},
        {"{\"op\": \"logs\", \"job\": 1, \"offset\": -5}", "offset"},
        {"{\"op\": \"list\", \"all\": \"yes\"}", "all"},
        {"{\"op\": \"submit\"}", "names no command"},
        {"{\"op\": \"submit\", \"argv\": \"!!!\"}", "names no command"},
        {"{\"op\": \"submit\", \"argv\": \"AA==\", \"cwd\": \"L3RtcA==\"}", "names no command"},  // argv [""]
        {"{\"op\": \"submit\", \"argv\": \"dHJ1ZQA=\", \"cwd\": \"dG1w\"}", "absolute path"},     // cwd "tmp"
        {"{\"op\": \"submit\", \"argv\": \"dHJ1ZQA=\", \"cwd\": \"L3RtcA==\", \"env\": \"$$\"}", "\"env\""},
        {"{\"op\": \"submit\", \"argv\": \"dHJ1ZQA=\", \"cwd\": \"L3RtcA==\"}", "no \"request\""},
        {"{\"op\": \"submit\", \"argv\": \"dHJ1ZQA=\", \"cwd\": \"L3RtcA==\", \"request\": {\"gpus\": -1}}", "gpus"},
        {"{\"op\": \"submit\", \"argv\": \"dHJ1ZQA=\", \"cwd\": \"L3RtcA==\", \"request\": {}, \"priority\": 1e12}",
         "priority"},
        {"{\"op\": \"submit\", \"argv\": \"dHJ1ZQA=\", \"cwd\": \"L3RtcA==\", \"request\": {}, \"after\": [0]}",
         "after"},
    };
    for (const auto& [line, says] : cases) {
        baton::Result<Request> r = parse_request(line);
        ASSERT_FALSE(r.ok()) << line;
        EXPECT_NE(r.error().message.find(says), std::string::npos) << line << " -> " << r.error().message;
        EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    }
    EXPECT_FALSE(parse_request(std::string(kMaxRequestBytes + 1, ' ')).ok());
    // A good submit for contrast: the same fields, well typed.
    EXPECT_TRUE(
        parse_request("{\"op\": \"submit\", \"argv\": \"dHJ1ZQA=\", \"cwd\": \"L3RtcA==\", \"request\": {}}").ok());
}

// The agent's answers are encoded and parsed in one place: a refusal keeps its code both ways, so a
// client acts on the code (an agent that went away, a job not found) and never on the message.
TEST(QueueProtocol, AnswersAndRefusalsRoundTripWithTheirCode) {
    using baton::ErrorCode;
    using baton::make_error;
    const std::string answer = answer_line({{"id", 7}, {"state", "queued"}});
    EXPECT_EQ(answer.back(), '\n');
    EXPECT_EQ(answer.find('\n'), answer.size() - 1);  // one line
    auto back = parse_answer_line(answer);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ((*back)["id"], 7);
    EXPECT_EQ((*back)["state"], "queued");

    auto listed = parse_answer_line(answer_line_with("jobs", R"([{"id":1},{"id":2}])"));
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ((*listed)["jobs"].size(), 2u);
    EXPECT_TRUE(parse_answer_line(answer_line_with("a\"b", "1")).ok());  // the key is escaped

    for (ErrorCode code : {ErrorCode::not_found, ErrorCode::permission_denied, ErrorCode::unavailable,
                           ErrorCode::invalid_argument, ErrorCode::failed}) {
        const std::string line = refusal_line(make_error(code, "job 3: \xff not \"yours\"\nsecond line"));
        EXPECT_EQ(line.find('\n'), line.size() - 1);  // a newline in the message stays inside the line
        auto r = parse_answer_line(line);
        ASSERT_FALSE(r.ok());
        EXPECT_TRUE(r.error().is(code)) << line;
        EXPECT_NE(r.error().message.find("not \"yours\""), std::string::npos);
    }
}

TEST(QueueProtocol, HostileAnswersAreRefusalsNotCrashes) {
    using baton::ErrorCode;
    for (const char* bad : {"", "null", "[1]", "\"ok\"", "{", "{\"ok\":\"true\"}", "{\"ok\":1}", "{}"}) {
        auto r = parse_answer_line(bad);
        EXPECT_FALSE(r.ok()) << bad;
        EXPECT_TRUE(r.error().is(ErrorCode::failed)) << bad;
    }
    auto unknown = parse_answer_line(R"({"ok":false,"code":"from_the_future","error":"new"})");
    ASSERT_FALSE(unknown.ok());
    EXPECT_TRUE(unknown.error().is(ErrorCode::failed));  // a code this client does not know: plain failure
    EXPECT_EQ(unknown.error().message, "new");
    auto wrong = parse_answer_line(R"({"ok":false,"code":3,"error":[]})");
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.error().message, "the agent refused");
}

TEST(QueueProtocol, AnArrayAndTheGroupRequestsRoundTrip) {
    Request r;
    r.op = Op::submit;
    r.submit.argv = {"train", "--lr={}"};
    r.submit.cwd = "/w";
    r.submit.request.group = "sweeps";
    r.submit.request.max_parallel = 4;
    r.submit.array.indices = {1, 4, 5};
    r.submit.array.values = {"0.1", "caf\xe9 two words", ""};
    r.submit.array.append = true;
    baton::Result<Request> back = parse_request(request_line(r));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->submit.array.indices, r.submit.array.indices);
    EXPECT_EQ(back->submit.array.values, r.submit.array.values);
    EXPECT_TRUE(back->submit.array.append);
    EXPECT_EQ(back->submit.request.group, "sweeps");
    EXPECT_EQ(back->submit.request.max_parallel, 4u);
    r.submit.array = {};
    back = parse_request(request_line(r));
    ASSERT_TRUE(back.ok());
    EXPECT_TRUE(back->submit.array.empty());

    Request g;
    g.op = Op::group_set;
    g.group = "serial";
    g.parallel = 3;
    back = parse_request(request_line(g));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->op, Op::group_set);
    EXPECT_EQ(back->group, "serial");
    EXPECT_EQ(back->parallel, 3u);
    g.op = Op::group_remove;
    back = parse_request(request_line(g));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->group, "serial");
    g.op = Op::groups;
    EXPECT_EQ(parse_request(request_line(g))->op, Op::groups);

    Request u;
    u.op = Op::usage;
    u.since_ms = 1764400000000;
    u.user = "ada";
    back = parse_request(request_line(u));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->op, Op::usage);
    EXPECT_EQ(back->since_ms, 1764400000000);
    EXPECT_EQ(back->user, "ada");
}

TEST(QueueProtocol, HostileArraysAndGroupRequestsGetOneLineErrors) {
    const std::string submit = R"({"op": "submit", "argv": "dHJ1ZQA=", "cwd": "L3RtcA==", "request": {}, )";
    std::string thousands;
    for (int i = 0; i <= 10000; ++i) thousands += (i ? "," : "") + std::to_string(i);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {submit + R"("array": 7})", "\"array\""},
        {submit + R"("array": {"indices": [1, 2], "values": "MQA="}})", "\"array\""},  // two indices, one value
        {submit + R"("array": {"indices": [-1], "values": "MQA="}})", "\"array\""},
        {submit + R"("array": {"indices": [1.5], "values": "MQA="}})", "\"array\""},
        {submit + R"("array": {"indices": [1], "values": "$$"}})", "\"array\""},
        {submit + R"("array": {"indices": [1], "values": "MQA=", "append": 1}})", "\"array\""},
        {submit + R"("array": {"indices": [], "values": ""}})", "no elements"},
        {submit + R"("array": {"indices": [)" + thousands + R"(], "values": ""}})", "more than 10000"},
        {R"({"op": "group_set", "group": "a"})", "parallel"},
        {R"({"op": "group_set", "group": "a", "parallel": 0})", "parallel"},
        {R"({"op": "group_set", "group": "a", "parallel": -2})", "parallel"},
        {R"({"op": "group_set", "parallel": 2})", "group"},
        {R"({"op": "group_set", "group": 5, "parallel": 2})", "group"},
        {R"({"op": "group_remove"})", "group"},
        {R"({"op": "group_remove", "group": ""})", "group"},
        {R"({"op": "usage", "since_ms": -1})", "since_ms"},
        {R"({"op": "usage", "since_ms": 1.5})", "since_ms"},
        {R"({"op": "usage", "since_ms": "yesterday"})", "since_ms"},
        {R"({"op": "usage", "user": 0})", "user"},
    };
    for (const auto& [line, says] : cases) {
        baton::Result<Request> r = parse_request(line);
        ASSERT_FALSE(r.ok()) << line.substr(0, 200);
        EXPECT_NE(r.error().message.find(says), std::string::npos)
            << line.substr(0, 200) << " -> " << r.error().message;
    }
}
