// PyTorch's Flight Recorder: the variables baton sets (unless the user did), the dumps read from
// real pickles by the reader (Debian's /usr/bin/python3) in the layout PyTorch writes, hostile
// files refused, the judgement across ranks (a rank missing a collective, a different op, sizes or
// dtypes, every rank in one that does not end), the pipes that ask for a dump, and the hang
// verdict that a rank's pending collective turns into "waits in all_reduce".
#include "hang/flight_recorder.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/run_program.hpp"
#include "hang/flight_recorder_dumps.hpp"
#include "hang/hang_verdict.hpp"
#include "test_support.hpp"

using baton::hang::FlightRecorderPaths;
using baton::hang::FrDump;
using baton::hang::FrEntry;
using baton::hang::judge_flight_recorder;
using baton::hang::PyFrame;

namespace {

constexpr const char* kPython = "/usr/bin/python3";

FrEntry call(std::int64_t seq, std::string op, std::string state, unsigned line = 61, std::string sizes = "[[1024]]",
             std::string dtypes = "Float") {
    FrEntry e;
    e.pg = "0";
    e.pg_desc = "default_pg";
    e.seq = seq;
    e.op = std::move(op);
    e.state = std::move(state);
    e.sizes = std::move(sizes);
    e.dtypes = std::move(dtypes);
    e.created_unix_ms = 1000 + seq;
    e.frames = {{"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 2050, e.op},
                {"/w/train.py", line, "train_step"},
                {"/w/train.py", 99, "<module>"}};
    return e;
}

// Rank `r` of 4 that called all_reduce #1..#last, the last one in `state`.
FrDump rank_dump(int r, std::int64_t last, const std::string& state) {
    FrDump d;
    d.rank = r;
    d.pg_ranks["0"] = {0, 1, 2, 3};
    for (std::int64_t s = 1; s <= last; ++s)
        d.entries.push_back(call(s, "all_reduce", s == last ? state : "completed"));
    return d;
}

// Writes the dumps of `spec` (make_dumps.py's JSON) under dir/rank_N.
void make_dumps(const baton::test::TempDir& dir, const std::string& spec) {
    dir.write("spec.json", spec);
    const baton::Result<baton::ProgramOutput> out =
        baton::run_program({kPython, baton::test::fixture_dir() + "/flight_recorder/make_dumps.py",
                            dir.path() + "/rank_", dir.path() + "/spec.json"},
                           "", 30);
    ASSERT_TRUE(out.ok());
    ASSERT_EQ(out->exit_status, 0) << out->err;
}

// 4 ranks of all_reduce #1..#14 completed; ranks 0, 1, 3 also called #15 (started), rank 2 did not.
std::string skip_spec() {
    std::string ranks;
    for (int r = 0; r < 4; ++r) {
        std::string calls;
        const int last = r == 2 ? 14 : 15;
        for (int s = 1; s <= last; ++s)
            calls += std::string(calls.empty() ? "" : ",") + "[" + std::to_string(s) +
                     ",\"all_reduce\",[[1024]],\"Float\",\"" + (s == 15 ? "started" : "completed") +
                     "\",\"/w/train.py\",61]";
        ranks += std::string(ranks.empty() ? "" : ",") + "\"" + std::to_string(r) + "\":[" + calls + "]";
    }
    return "{\"world\":4,\"ranks\":{" + ranks + "}}";
}

std::vector<std::pair<int, std::string>> files(const baton::test::TempDir& dir, int n) {
    std::vector<std::pair<int, std::string>> out;
    for (int r = 0; r < n; ++r) out.emplace_back(r, dir.path() + "/rank_" + std::to_string(r));
    return out;
}

}  // namespace

TEST(FlightRecorder, EnvironmentSetsBothNamesUnlessTheUserSetEither) {
    const auto env = baton::hang::flight_recorder_environment("/run/fr", baton::test::env_lookup({}));
    std::map<std::string, std::string> m(env.begin(), env.end());
    EXPECT_EQ(m["TORCH_NCCL_TRACE_BUFFER_SIZE"], "2000");
    EXPECT_EQ(m["TORCH_FR_BUFFER_SIZE"], "2000");
    EXPECT_EQ(m["TORCH_NCCL_DUMP_ON_TIMEOUT"], "1");
    EXPECT_EQ(m["TORCH_FR_DUMP_ON_TIMEOUT"], "1");
    EXPECT_EQ(m["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"], "/run/fr/rank_");
    EXPECT_EQ(m["TORCH_FR_DUMP_TEMP_FILE"], "/run/fr/rank_");
    EXPECT_EQ(m["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"], "/run/fr/pipe_");
    EXPECT_EQ(m["TORCH_FR_DEBUG_INFO_PIPE_FILE"], "/run/fr/pipe_");

    // The user's own file prefix (under either name) is kept, and it is where the dumps are read.
    const auto user = baton::test::env_lookup({{"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/scratch/trace_"}});
    const auto env2 = baton::hang::flight_recorder_environment("/run/fr", user);
    std::map<std::string, std::string> m2(env2.begin(), env2.end());
    EXPECT_FALSE(m2.count("TORCH_NCCL_DEBUG_INFO_TEMP_FILE"));
    EXPECT_FALSE(m2.count("TORCH_FR_DUMP_TEMP_FILE")) << "the newer name would override the user's";
    EXPECT_EQ(m2["TORCH_FR_DEBUG_INFO_PIPE_FILE"], "/run/fr/pipe_");
    const FlightRecorderPaths p = baton::hang::flight_recorder_paths("/run/fr", user);
    EXPECT_TRUE(p.enabled);
    EXPECT_EQ(p.dump_prefix, "/scratch/trace_");
    EXPECT_EQ(p.pipe_prefix, "/run/fr/pipe_");

    // A recorder the user turned off stays off, and the verdict says why.
    const auto off = baton::test::env_lookup({{"TORCH_NCCL_TRACE_BUFFER_SIZE", "0"}});
    const auto env3 = baton::hang::flight_recorder_environment("/run/fr", off);
    for (const auto& [k, v] : env3) EXPECT_NE(k, "TORCH_FR_BUFFER_SIZE");
    const FlightRecorderPaths q = baton::hang::flight_recorder_paths("/run/fr", off);
    EXPECT_FALSE(q.enabled);
    EXPECT_EQ(q.off_reason, "TORCH_NCCL_TRACE_BUFFER_SIZE=0");
    const baton::hang::FrRequest r = baton::hang::request_flight_recorder_dumps(q, {0});
    EXPECT_TRUE(r.asked.empty());
    EXPECT_NE(r.not_asked.at(0).find("off"), std::string::npos);
}

TEST(FlightRecorder, NamesTheRankThatNeverCalledTheCollective) {
    std::vector<FrDump> dumps;
    for (int r = 0; r < 4; ++r) dumps.push_back(rank_dump(r, r == 2 ? 14 : 15, r == 2 ? "completed" : "started"));
    const auto v = judge_flight_recorder(dumps, {}, false);
    ASSERT_TRUE(v);
    EXPECT_TRUE(v->desync);
    EXPECT_EQ(v->culprits, std::vector<int>{2});
    EXPECT_EQ(v->seq, 15);
    EXPECT_EQ(v->op, "all_reduce");
    EXPECT_EQ(v->summary,
              "Flight Recorder: rank 2 never called all_reduce #15 of process group 0 (default_pg): ranks 0, 1, 3 "
              "called it at /w/train.py:61 (sizes [[1024]], Float; started); rank 2's last there is all_reduce #14 "
              "of process group 0 (default_pg) at /w/train.py:61 (completed)");

    // A member of the group with no collective at all in it.
    dumps[2].entries.clear();
    const auto none = judge_flight_recorder(dumps, {}, false);
    ASSERT_TRUE(none);
    EXPECT_EQ(none->culprits, std::vector<int>{2});
    EXPECT_NE(none->summary.find("rank 2 has called no collective in it"), std::string::npos) << none->summary;
}

TEST(FlightRecorder, DifferentOpsSizesOrDtypesAtTheSameSequenceNumber) {
    std::vector<FrDump> dumps;
    for (int r = 0; r < 4; ++r) dumps.push_back(rank_dump(r, 15, "started"));
    dumps[2].entries.back() = call(15, "broadcast", "started", 90);
    auto v = judge_flight_recorder(dumps, {}, false);
    ASSERT_TRUE(v);
    EXPECT_TRUE(v->desync);
    EXPECT_EQ(v->culprits, std::vector<int>{2});
    EXPECT_EQ(v->summary,
              "Flight Recorder: the ranks called #15 of process group 0 (default_pg) as different collectives: "
              "ranks 0, 1, 3 all_reduce at /w/train.py:61; rank 2 broadcast at /w/train.py:90");

    dumps[2].entries.back() = call(15, "all_reduce", "started", 61, "[[512]]");
    v = judge_flight_recorder(dumps, {}, false);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->culprits, std::vector<int>{2});
    EXPECT_NE(v->summary.find("with different sizes: ranks 0, 1, 3 [[1024]] at /w/train.py:61; rank 2 [[512]]"),
              std::string::npos)
        << v->summary;

    dumps[2].entries.back() = call(15, "all_reduce", "started", 61, "[[1024]]", "Half");
    v = judge_flight_recorder(dumps, {}, false);
    ASSERT_TRUE(v);
    EXPECT_NE(v->summary.find("with different dtypes"), std::string::npos) << v->summary;
}

TEST(FlightRecorder, EveryRankInTheSameCollectiveOrNothingPending) {
    std::vector<FrDump> dumps;
    for (int r = 0; r < 4; ++r) dumps.push_back(rank_dump(r, 15, "started"));
    auto v = judge_flight_recorder(dumps, {}, false);
    ASSERT_TRUE(v);
    EXPECT_FALSE(v->desync);
    EXPECT_TRUE(v->culprits.empty());
    EXPECT_NE(v->summary.find("every rank is in all_reduce #15 of process group 0 (default_pg) at /w/train.py:61 "
                              "(started) and it does not complete: no rank is missing from it"),
              std::string::npos)
        << v->summary;
    v = judge_flight_recorder(dumps, {}, true);
    ASSERT_TRUE(v);
    EXPECT_NE(v->summary.find("the ranks of other nodes are not in these dumps"), std::string::npos);

    // One rank has not started it: its GPU is busy with earlier work.
    dumps[1].entries.back().state = "scheduled";
    v = judge_flight_recorder(dumps, {}, false);
    ASSERT_TRUE(v);
    EXPECT_FALSE(v->desync);
    EXPECT_EQ(v->culprits, std::vector<int>{1});

    // A member without a dump (gone) is named as the one it may wait for.
    dumps[1].entries.back().state = "started";
    std::vector<FrDump> three = {dumps[0], dumps[1], dumps[3]};
    v = judge_flight_recorder(three, {0, 1, 2, 3}, false);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->culprits, std::vector<int>{2});
    EXPECT_NE(v->summary.find("ranks 0, 1, 3 are in all_reduce #15 of process group 0 (default_pg) at /w/train.py:61 "
                              "(started) and it does not complete; rank 2 of the group gave no dump"),
              std::string::npos)
        << v->summary;
    v = judge_flight_recorder(three, {0, 1, 3}, true);
    ASSERT_TRUE(v);
    EXPECT_TRUE(v->culprits.empty()) << "rank 2 is another node's: not expected here";

    for (FrDump& d : dumps) d.entries.back().state = "completed";
    EXPECT_FALSE(judge_flight_recorder(dumps, {}, false)) << "a healthy job's dumps say nothing";
    EXPECT_FALSE(judge_flight_recorder({}, {}, false));
}

TEST(FlightRecorder, ParsesTheReadersJsonAndRefusesWhatIsNotADump) {
    const char* json =
        R"({"version":"2.4","pg_config":{"0":{"name":"0","desc":"default_pg","ranks":"[0, 1, 2, 3]"}},
            "entries":[{"record_id":0,"pg_id":0,"process_group":["0","default_pg"],"collective_seq_id":7,
            "p2p_seq_id":0,"op_id":7,"profiling_name":"nccl:all_reduce","time_created_ns":1700000000123456789,
            "input_sizes":[[4,1024],[3]],"input_dtypes":["Float","Long"],"state":"started","is_p2p":false,
            "frames":[{"name":"train_step","filename":"/w/train.py","line":61}]},
            {"process_group":["0","default_pg"],"p2p_seq_id":3,"profiling_name":"nccl:send 0->1","is_p2p":true,
             "state":"started"}]})";
    const baton::Result<FrDump> d = baton::hang::parse_flight_recorder_json(json, 3);
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_EQ(d->rank, 3);
    EXPECT_EQ(d->version, "2.4");
    EXPECT_EQ(d->pg_ranks.at("0"), (std::vector<int>{0, 1, 2, 3}));
    ASSERT_EQ(d->entries.size(), 2u);
    const FrEntry& e = d->entries[0];
    EXPECT_EQ(e.pg, "0");
    EXPECT_EQ(e.pg_desc, "default_pg");
    EXPECT_EQ(e.seq, 7);
    EXPECT_EQ(e.op, "all_reduce");
    EXPECT_EQ(e.sizes, "[[4,1024],[3]]");
    EXPECT_EQ(e.dtypes, "Float, Long");
    EXPECT_EQ(e.created_unix_ms, 1700000000123);
    EXPECT_EQ(e.frames, (std::vector<PyFrame>{{"/w/train.py", 61, "train_step"}}));
    EXPECT_TRUE(d->entries[1].p2p);
    EXPECT_EQ(d->entries[1].seq, 3);
    ASSERT_TRUE(baton::hang::oldest_pending(*d));
    EXPECT_EQ(baton::hang::oldest_pending(*d)->seq, 7) << "point-to-point calls aside";

    for (const char* bad : {"", "[", "[1,2]", "{}", R"({"entries":5})", "nul"})
        EXPECT_FALSE(baton::hang::parse_flight_recorder_json(bad, 0).ok()) << bad;
    // Odd types inside are skipped or read as text, never a throw.
    const baton::Result<FrDump> odd = baton::hang::parse_flight_recorder_json(
        R"({"entries":[5,"x",{"process_group":7,"collective_seq_id":"9","frames":[1,{"line":-4}],"state":null,
            "input_dtypes":[1,null]}],"pg_config":{"a":3,"b":{"ranks":"[99999999999999, 2]"}}})",
        0);
    ASSERT_TRUE(odd.ok());
    ASSERT_EQ(odd->entries.size(), 1u);
    EXPECT_EQ(odd->entries[0].pg, "7");
    EXPECT_EQ(odd->entries[0].seq, 0);
    EXPECT_TRUE(odd->entries[0].frames.size() == 1 && !odd->entries[0].frames[0].line);
    // Numbers no int64 holds (found by fuzz_flight_recorder): 0, not undefined behaviour.
    const baton::Result<FrDump> huge = baton::hang::parse_flight_recorder_json(
        R"({"entries":[{"collective_seq_id":1.7e22,"time_created_ns":-1e300,"frames":[{"line":99999999999}]}],
            "pg_config":{"0":{"ranks":[18446744073709551615, -3, 2]}}})",
        0);
    ASSERT_TRUE(huge.ok());
    EXPECT_EQ(huge->entries[0].seq, 0);
    EXPECT_EQ(huge->entries[0].created_unix_ms, 0);
    EXPECT_FALSE(huge->entries[0].frames[0].line);
    EXPECT_EQ(huge->pg_ranks.at("0"), std::vector<int>{2});
}

TEST(FlightRecorder, ReadsRealPicklesForFourRanksAndNamesTheOneMissingASequenceNumber) {
    baton::test::TempDir dir;
    make_dumps(dir, skip_spec());
    const baton::hang::FrCollection c = baton::hang::read_flight_recorder_dumps(kPython, files(dir, 4), 0, 30);
    EXPECT_TRUE(c.no_dump.empty()) << c.no_dump.begin()->second;
    ASSERT_EQ(c.dumps.size(), 4u);
    EXPECT_EQ(c.dumps[2].entries.size(), 14u);
    EXPECT_EQ(c.dumps[0].entries.back().state, "started");
    EXPECT_EQ(c.dumps[0].entries.back().pg_desc, "default_pg");
    const auto v = judge_flight_recorder(c.dumps, {}, false);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->culprits, std::vector<int>{2});
    EXPECT_EQ(v->seq, 15);
    EXPECT_NE(v->summary.find("rank 2 never called all_reduce #15 of process group 0 (default_pg)"), std::string::npos)
        << v->summary;

    // A dump older than the request is not the one asked for.
    const std::int64_t later = (baton::unix_millis() + 60'000) * 1'000'000;
    const baton::hang::FrCollection old = baton::hang::read_flight_recorder_dumps(kPython, files(dir, 1), later, 30);
    EXPECT_TRUE(old.dumps.empty());
    EXPECT_NE(old.no_dump.at(0).find("older than the request"), std::string::npos);
}

TEST(FlightRecorder, HostileDumpsAreRefusedOneByOneAndRunNoCode) {
    baton::test::TempDir dir;
    make_dumps(dir, skip_spec());
    const std::string marker = dir.path() + "/pwned";
    // GLOBAL os.system: a pickle that would run a command when loaded by pickle.load.
    dir.write("rank_0", "cos\nsystem\n(Vtouch " + marker + "\ntR.");
    // Truncated mid-way (PyTorch writes its file in place).
    const std::string whole = baton::test::read_text(dir.path() + "/rank_1");
    dir.write("rank_1", whole.substr(0, whole.size() / 2));
    // Not a dict, and a list that refers to itself through the memo in a tower of 60 levels.
    const baton::Result<baton::ProgramOutput> made =
        baton::run_program({kPython, "-c",
                            "import pickle,sys\n"
                            "open(sys.argv[1],'wb').write(pickle.dumps([1,2,3]))\n"
                            "x=[]\n"
                            "for i in range(60): x=[x,x]\n"
                            "open(sys.argv[2],'wb').write(pickle.dumps({'entries': x}))\n",
                            dir.path() + "/rank_2", dir.path() + "/rank_4"},
                           "", 30);
    ASSERT_TRUE(made.ok() && made->exit_status == 0);
    dir.write("rank_5", std::string(1000, '\x80'));
    mkdir((dir.path() + "/rank_6").c_str(), 0700);
    // A link to a good dump is not followed (the agent reads its users' directories as root).
    ASSERT_EQ(symlink((dir.path() + "/rank_3").c_str(), (dir.path() + "/rank_8").c_str()), 0);
    const baton::hang::FrCollection c = baton::hang::read_flight_recorder_dumps(kPython, files(dir, 9), 0, 30);
    EXPECT_EQ(access(marker.c_str(), F_OK), -1) << "the reader ran the pickle's code";
    ASSERT_EQ(c.dumps.size(), 1u);
    EXPECT_EQ(c.dumps[0].rank, 3);
    EXPECT_NE(c.no_dump.at(0).find("refused global os.system"), std::string::npos) << c.no_dump.at(0);
    EXPECT_NE(c.no_dump.at(1).find("unreadable"), std::string::npos) << c.no_dump.at(1);
    EXPECT_NE(c.no_dump.at(2).find("not a dict"), std::string::npos) << c.no_dump.at(2);
    EXPECT_NE(c.no_dump.at(4).find("too large or too deep"), std::string::npos) << c.no_dump.at(4);
    EXPECT_NE(c.no_dump.at(5).find("unreadable"), std::string::npos) << c.no_dump.at(5);
    EXPECT_NE(c.no_dump.at(6).find("is not a file"), std::string::npos) << c.no_dump.at(6);
    EXPECT_NE(c.no_dump.at(7).find("no dump came"), std::string::npos) << c.no_dump.at(7);
    EXPECT_NE(c.no_dump.at(8).find("is not a file"), std::string::npos) << c.no_dump.at(8);

    const baton::hang::FrCollection none =
        baton::hang::read_flight_recorder_dumps("/nonexistent/python3", files(dir, 4), 0, 30);
    EXPECT_TRUE(none.dumps.empty());
    EXPECT_NE(none.no_dump.at(3).find("no Python to read it with"), std::string::npos) << none.no_dump.at(3);
}

TEST(FlightRecorder, PipesAskWithoutBlockingAndSayWhyNot) {
    baton::test::TempDir dir;
    FlightRecorderPaths p;
    p.enabled = true;
    p.dump_prefix = dir.path() + "/rank_";
    p.pipe_prefix = dir.path() + "/pipe_";
    // Rank 0: a pipe with a reader (as ProcessGroupNCCL opens it: O_RDONLY | O_NONBLOCK).
    ASSERT_EQ(mkfifo((dir.path() + "/pipe_0.pipe").c_str(), 0600), 0);
    const int reader = open((dir.path() + "/pipe_0.pipe").c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(reader, 0);
    // Rank 1: a pipe nobody reads (its process is gone). Rank 2: no pipe. Rank 3: a plain file.
    // Rank 4: a link to rank 0's pipe (not written through).
    ASSERT_EQ(mkfifo((dir.path() + "/pipe_1.pipe").c_str(), 0600), 0);
    dir.write("pipe_3.pipe", "");
    ASSERT_EQ(symlink((dir.path() + "/pipe_0.pipe").c_str(), (dir.path() + "/pipe_4.pipe").c_str()), 0);
    const double t0 = baton::monotonic_seconds();
    const baton::hang::FrRequest r = baton::hang::request_flight_recorder_dumps(p, {0, 1, 2, 3, 4});
    EXPECT_LT(baton::monotonic_seconds() - t0, 1.0);
    EXPECT_EQ(r.asked, std::vector<int>{0});
    char buf[8] = {};
    EXPECT_EQ(read(reader, buf, sizeof buf), 2) << "the byte reached the reader, once";
    close(reader);
    EXPECT_NE(r.not_asked.at(1).find("nobody reads"), std::string::npos);
    EXPECT_NE(r.not_asked.at(2).find("no Flight Recorder pipe"), std::string::npos);
    EXPECT_NE(r.not_asked.at(3).find("no Flight Recorder pipe"), std::string::npos);
    EXPECT_NE(r.not_asked.at(4).find("no Flight Recorder pipe"), std::string::npos);

    // Ready once rank 0's dump is written after the request and has settled.
    EXPECT_FALSE(baton::hang::flight_recorder_dumps_ready(p, r, r.at_unix_ns));
    dir.write("rank_0", "x");
    const std::int64_t now = (baton::unix_millis() + 1) * 1'000'000;
    EXPECT_FALSE(baton::hang::flight_recorder_dumps_ready(p, r, now)) << "written just now: not settled";
    EXPECT_TRUE(baton::hang::flight_recorder_dumps_ready(p, r, now + 300'000'000));
}

TEST(FlightRecorder, APendingCollectiveMakesAStillRankWaitInIt) {
    using baton::hang::Look;
    using baton::hang::RankLook;
    // NCCL: every rank's main thread sits in `loss.item()` (a sync), no CPU; ranks 0, 1, 3 have
    // all_reduce #15 pending since before the first look, rank 2 is in evaluate() and running.
    const std::vector<PyFrame> item = {{"/w/train.py", 70, "train_step"}, {"/w/train.py", 99, "<module>"}};
    auto rank = [&](int r, std::vector<PyFrame> frames, double cpu) {
        RankLook l;
        l.rank = r;
        l.pid = 100 + r;
        l.state = 'S';
        l.cpu_seconds = cpu;
        l.has_stacks = true;
        l.frames = std::move(frames);
        return l;
    };
    Look before, after;
    before.at = 10;
    before.unix_ms = 10'000;
    after.at = 15;
    after.unix_ms = 15'000;
    for (int r = 0; r < 4; ++r) {
        if (r == 2) {
            before.ranks.push_back(rank(2, {{"/w/train.py", 88, "evaluate"}, {"/w/train.py", 99, "<module>"}}, 1));
            after.ranks.push_back(rank(2, {{"/w/train.py", 86, "evaluate"}, {"/w/train.py", 99, "<module>"}}, 6));
            continue;
        }
        before.ranks.push_back(rank(r, item, 1));
        RankLook a = rank(r, item, 1);
        a.fr_pending = call(15, "all_reduce", "started");
        a.fr_pending->created_unix_ms = 9'000;
        after.ranks.push_back(a);
    }
    std::vector<FrDump> dumps;
    for (int r = 0; r < 4; ++r) dumps.push_back(rank_dump(r, r == 2 ? 14 : 15, r == 2 ? "completed" : "started"));
    after.flight_recorder = judge_flight_recorder(dumps, {}, false);
    const auto v = baton::hang::judge_hang(before, after, 5'000, false);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->rule, "rank_desync");
    EXPECT_EQ(v->ranks[0].condition, baton::hang::RankCondition::waiting_in_collective);
    EXPECT_EQ(v->ranks[0].collective, "all_reduce");
    ASSERT_TRUE(v->ranks[0].where);
    EXPECT_EQ(v->ranks[0].where->line, 61u) << "where the collective was called, not where it is waited for";
    EXPECT_EQ(v->ranks[2].condition, baton::hang::RankCondition::running);
    EXPECT_NE(v->summary.find("rank 2 is in evaluate() at /w/train.py:86, running"), std::string::npos) << v->summary;
    EXPECT_NE(v->summary.find("ranks 0, 1, 3 wait in all_reduce at /w/train.py:61"), std::string::npos) << v->summary;
    EXPECT_NE(v->summary.find("Flight Recorder: rank 2 never called all_reduce #15"), std::string::npos) << v->summary;

    // A collective that began after the first look may yet complete: no wait from it.
    for (RankLook& a : after.ranks)
        if (a.fr_pending) a.fr_pending->created_unix_ms = 12'000;
    after.flight_recorder.reset();
    const auto fresh = baton::hang::judge_hang(before, after, 5'000, false);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(fresh->ranks[0].condition, baton::hang::RankCondition::blocked);

    // No dumps: the verdict says it judged by the stacks alone.
    after.flight_recorder_none = "no Flight Recorder pipe (gloo, PyTorch before 2.3, or no NCCL process group yet)";
    const auto stacks_only = baton::hang::judge_hang(before, after, 5'000, false);
    ASSERT_TRUE(stacks_only);
    EXPECT_EQ(stacks_only->flight_recorder.rfind("stacks only: no Flight Recorder pipe", 0), 0u);
    EXPECT_NE(baton::hang::hang_text(*stacks_only, "baton launch").find("  stacks only: no Flight Recorder pipe"),
              std::string::npos);
}
