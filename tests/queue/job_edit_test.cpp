// baton edit's flags -> the edit (only what is given), its refusals with the flag named, and its
// round trip over the socket with hostile fields refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "queue/job_edit.hpp"
#include "queue/protocol.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

std::string edit_refusal(const EditFlags& f, const std::vector<std::string>& argv = {}) {
    Result<JobEdit> e = edit_of(f, argv);
    EXPECT_FALSE(e.ok());
    if (e.ok()) return "";
    EXPECT_EQ(e.error().code, ErrorCode::invalid_argument);
    return e.error().message;
}

}  // namespace

TEST(JobEdit, OnlyWhatIsGivenChanges) {
    EditFlags f;
    f.priority = 5;
    Result<JobEdit> e = edit_of(f, {});
    ASSERT_TRUE(e.ok()) << e.error().message;
    EXPECT_EQ(e->priority, 5);
    EXPECT_FALSE(e->argv || e->name || e->after || e->gpus || e->gpu_list || e->gpu_memory_bytes || e->cpus ||
                 e->memory_bytes || e->group);
    f = {};
    f.gpu_mem = "20G";
    f.mem = "0";
    f.after = "3,4:ok";
    f.group = "";
    f.cpus = 0;
    e = edit_of(f, {"python3", "train.py", "--lr", "0.1"});
    ASSERT_TRUE(e.ok()) << e.error().message;
    EXPECT_EQ(e->gpu_memory_bytes, 20ull << 30);
    EXPECT_EQ(e->memory_bytes, 0u);
    EXPECT_EQ(e->after, (std::vector<std::int64_t>{3, 4}));
    EXPECT_TRUE(e->after_ok);
    EXPECT_EQ(e->group, "");
    EXPECT_EQ(e->cpus, 0u);
    EXPECT_EQ(e->argv->size(), 4u);
    f = {};
    f.after = "";
    EXPECT_TRUE(edit_of(f, {})->after->empty());  // no dependencies any more
}

TEST(JobEdit, BadFlagsAreRefusedWithTheFlagNamed) {
    EXPECT_EQ(edit_refusal({}).rfind("edit: nothing to change", 0), 0u);
    EditFlags f;
    f.gpus = 1;
    f.gpu = "0";
    EXPECT_EQ(edit_refusal(f), "--gpus and --gpu: give one (a count, or the GPUs themselves)");
    f = {};
    f.gpu_mem = "lots";
    EXPECT_EQ(edit_refusal(f), "--gpu-mem lots: a size like 20G, 512M or 1.5T (0: none)");
    f = {};
    f.mem = "64Q";
    EXPECT_EQ(edit_refusal(f), "--mem 64Q: a size like 64G or 512M (0: none)");
    f = {};
    f.after = "x";
    EXPECT_EQ(edit_refusal(f).rfind("--after x: ", 0), 0u);
    f = {};
    f.group = "a b";
    EXPECT_EQ(edit_refusal(f).rfind("--group: group 'a b'", 0), 0u);
    f = {};
    f.gpu = "";
    EXPECT_FALSE(edit_refusal(f).empty());
    EXPECT_EQ(edit_refusal({}, {""}), "edit: the command's first word is empty");
}

TEST(JobEdit, TheEditRoundTripsAndHostileFieldsAreRefused) {
    EditFlags f;
    f.gpu = "0,GPU-ab";
    f.gpu_mem = "0";
    f.priority = -3;
    f.after = "7";
    f.name = "café ✓";  // (names travel as JSON text: valid UTF-8, as for submit)
    Result<JobEdit> e = edit_of(f, {"echo", "\xff", ""});
    ASSERT_TRUE(e.ok());
    Request r;
    r.op = Op::edit;
    r.jobs = {12};
    r.edit = *e;
    Result<Request> back = parse_request(request_line(r));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->op, Op::edit);
    EXPECT_EQ(back->jobs, std::vector<std::int64_t>{12});
    EXPECT_EQ(back->edit.argv, e->argv);
    EXPECT_EQ(back->edit.gpu_list, "0,GPU-ab");
    EXPECT_EQ(back->edit.gpu_memory_bytes, 0u);
    EXPECT_EQ(back->edit.priority, -3);
    EXPECT_EQ(back->edit.after, std::vector<std::int64_t>{7});
    EXPECT_FALSE(back->edit.after_ok);
    EXPECT_EQ(back->edit.name, "café ✓");
    EXPECT_FALSE(back->edit.cpus.has_value());

    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"op": "edit", "edit": {"priority": 1}})", "\"job\""},
        {R"({"op": "edit", "job": 3})", "no \"edit\""},
        {R"({"op": "edit", "job": 3, "edit": 5})", "not an object"},
        {R"({"op": "edit", "job": 3, "edit": {}})", "changes nothing"},
        {R"({"op": "edit", "job": 3, "edit": {"argv": "!!"}})", "names no command"},
        {R"({"op": "edit", "job": 3, "edit": {"argv": "AA=="}})", "names no command"},
        {R"({"op": "edit", "job": 3, "edit": {"priority": 1e12}})", "priority"},
        {R"({"op": "edit", "job": 3, "edit": {"after": [0]}})", "after"},
        {R"({"op": "edit", "job": 3, "edit": {"after": [1], "after_ok": "yes"}})", "after_ok"},
        {R"({"op": "edit", "job": 3, "edit": {"gpus": -1}})", "gpus"},
        {R"({"op": "edit", "job": 3, "edit": {"gpus": 5000}})", "gpus"},
        {R"({"op": "edit", "job": 3, "edit": {"cpus": 1.5}})", "cpus"},
        {R"({"op": "edit", "job": 3, "edit": {"memory_bytes": "1G"}})", "memory_bytes"},
        {R"({"op": "edit", "job": 3, "edit": {"group": 4}})", "group"},
    };
    for (const auto& [line, says] : cases) {
        Result<Request> bad = parse_request(line);
        ASSERT_FALSE(bad.ok()) << line;
        EXPECT_NE(bad.error().message.find(says), std::string::npos) << line << " -> " << bad.error().message;
    }
}
