// A profiler trace read by streaming: Kineto's layout (both spellings of its categories), the legacy
// profiler's bare array as Debian's torch 1.13 writes it (recorded here by /usr/bin/python3), and
// hostile input refused in one line.
#include "profile/trace_events.hpp"

#include <gtest/gtest.h>

#include "core/run_program.hpp"
#include "test_support.hpp"

using baton::profile::Category;
using baton::profile::parse_trace;
using baton::profile::Trace;

TEST(TraceEvents, KinetosLayoutKeepsCompleteEventsWithTheirIds) {
    const char* json = R"J({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
      "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 1000.5, "dur": 12.25,
         "args": {"External id": 5, "Input Dims": [[8, 8], [8, 8]], "Input type": ["float", "float"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 1003, "dur": 4,
         "args": {"correlation": 42, "External id": 5}},
        {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 1010, "dur": 30,
         "args": {"device": 0, "stream": 7, "correlation": 42, "External id": 5, "grid": [1, 1, 1]}},
        {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 1050,
         "dur": 8, "args": {"device": 0, "stream": 7, "bytes": 4096}},
        {"ph": "s", "cat": "ac2g", "name": "", "id": 42, "pid": 7, "tid": 7, "ts": 1003},
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python3"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 7, "tid": "main", "ts": 990,
         "dur": 100, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 1100, "dur": -3}
      ],
      "traceName": "x.json"})J";
    baton::Result<Trace> t = parse_trace(json);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_FALSE(t->legacy);
    ASSERT_EQ(t->events.size(), 6u) << "the flow and metadata events are not kept";
    EXPECT_EQ(t->events[0].category, Category::cpu_op);
    EXPECT_EQ(t->name_of(t->events[0]), "aten::mm");
    EXPECT_DOUBLE_EQ(t->events[0].ts_us, 1000.5);
    EXPECT_DOUBLE_EQ(t->events[0].dur_us, 12.25);
    EXPECT_EQ(t->events[0].external_id, 5);
    EXPECT_EQ(t->events[1].correlation, 42);
    EXPECT_EQ(t->events[2].category, Category::kernel);
    EXPECT_EQ(t->events[2].device, 0);
    EXPECT_EQ(t->events[2].stream, 7);
    EXPECT_EQ(t->events[3].category, Category::gpu_memcpy) << "the capitalised spelling of older Kineto";
    EXPECT_EQ(t->events[3].bytes, 4096);
    EXPECT_EQ(t->events[4].category, Category::user_annotation);
    EXPECT_NE(t->events[4].tid, 0) << "a string tid is a number too";
    EXPECT_EQ(t->events[5].dur_us, 0) << "a negative duration is none";
    EXPECT_EQ(t->events[5].name, t->events[0].name) << "names are interned";
    EXPECT_EQ(t->names[t->events[0].input_type], "float") << "the first input's type";
    EXPECT_EQ(t->names.size(), 8u) << "(with the names of the flow and metadata events, read before their ph, and "
                                      "the input type)";
}

TEST(TraceEvents, TheLegacyProfilersBareArrayFromDebiansTorch) {
    baton::test::TempDir d;
    const std::string path = d.path() + "/trace.json";
    const baton::Result<baton::ProgramOutput> rec = baton::run_program(
        {"/usr/bin/python3", "-c",
         "import sys, torch\n"
         "from torch.profiler import profile, ProfilerActivity, schedule\n"
         "m = torch.nn.Linear(64, 64); opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
         "def on_ready(p): p.export_chrome_trace(sys.argv[1])\n"
         "with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2),\n"
         "             on_trace_ready=on_ready) as p:\n"
         "    for i in range(5):\n"
         "        loss = m(torch.randn(32, 64)).sum(); loss.backward(); opt.step(); opt.zero_grad(); loss.item()\n"
         "        p.step()\n",
         path},
        "", 120);
    ASSERT_TRUE(rec.ok());
    ASSERT_EQ(rec->exit_status, 0) << rec->err;
    baton::Result<Trace> t = parse_trace(baton::test::read_text(path));
    ASSERT_TRUE(t.ok()) << t.error().message;
    std::size_t steps = 0, addmm = 0;
    for (const baton::profile::TraceEvent& e : t->events) {
        const std::string& n = t->name_of(e);
        if (n.rfind("ProfilerStep#", 0) == 0) {
            EXPECT_EQ(e.category, Category::user_annotation);
            ++steps;
        }
        if (n == "aten::addmm") {
            EXPECT_EQ(e.category, Category::cpu_op);
            ++addmm;
        }
        EXPECT_GE(e.dur_us, 0);
    }
    if (t->legacy) {  // Debian's torch 1.13 has no Kineto: the legacy layout
        EXPECT_EQ(steps, 2u) << "the two active steps";
    } else {
        EXPECT_GE(steps, 2u);
    }
    EXPECT_GE(addmm, 2u) << "the Linear's forward in each active step";
}

TEST(TraceEvents, HostileInputIsOneErrorNeverACrash) {
    for (const char* bad : {"", "{", "[{\"ph\": \"X\", \"name\": \"a\"", "{\"traceEvents\": [1, 2", "nul", "{}",
                            "{\"other\": []}", "\"text\"", "42"}) {
        baton::Result<Trace> t = parse_trace(bad);
        EXPECT_FALSE(t.ok()) << bad;
        if (!t.ok()) {
            EXPECT_EQ(t.error().message.find('\n'), std::string::npos) << t.error().message;
        }
    }
    std::string deep = "{\"traceEvents\": [{\"args\": ";
    for (int i = 0; i < 200; ++i) deep += "[";
    baton::Result<Trace> t = parse_trace(deep);
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message.find("nested deeper than 64 levels"), std::string::npos) << t.error().message;
    baton::profile::TraceLimits few;
    few.max_events = 2;
    t = parse_trace(R"([{"ph":"X","name":"a"},{"ph":"X","name":"b"},{"ph":"X","name":"c"}])", few);
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message.find("more than 2 events"), std::string::npos);
    // Numbers no int64 holds are 0; odd types are skipped.
    t = parse_trace(R"({"traceEvents": [{"ph": "X", "cat": 5, "name": ["x"], "ts": -1e300, "dur": 1e30,
                       "pid": 1.5e300, "args": {"correlation": 1e99, "device": 1e12, "bytes": "many"}}]})");
    ASSERT_TRUE(t.ok()) << t.error().message;
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->events[0].pid, 0);
    EXPECT_EQ(t->events[0].correlation, 0);
    EXPECT_EQ(t->events[0].device, -1);
    EXPECT_EQ(t->events[0].bytes, -1);
    // An event without a name has the empty one (found by fuzz_trace_events: an index past the names).
    t = parse_trace(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "pid": 0}]})");
    ASSERT_TRUE(t.ok());
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->name_of(t->events[0]), "");
}

TEST(TraceEvents, GzippedBytesInMemoryAndBrokenOnes) {
    baton::test::TempDir d;
    d.write("t.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]})");
    ASSERT_EQ(baton::run_program({"/bin/gzip", "-k", d.path() + "/t.json"}, "", 30)->exit_status, 0);
    const std::string gz = baton::test::read_text(d.path() + "/t.json.gz");
    baton::Result<Trace> t = baton::profile::parse_trace_bytes(gz);
    ASSERT_TRUE(t.ok()) << t.error().message;
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->name_of(t->events[0]), "k");
    EXPECT_TRUE(baton::profile::parse_trace_bytes(baton::test::read_text(d.path() + "/t.json")).ok()) << "plain too";
    baton::Result<Trace> cut = baton::profile::parse_trace_bytes(gz.substr(0, gz.size() / 2));
    ASSERT_FALSE(cut.ok());
    EXPECT_EQ(cut.error().message.find('\n'), std::string::npos);
    std::string flipped = gz;
    flipped[flipped.size() - 6] = static_cast<char>(flipped[flipped.size() - 6] ^ 0x55);  // its CRC
    EXPECT_FALSE(baton::profile::parse_trace_bytes(flipped).ok()) << "a corrupt stream";
    EXPECT_FALSE(baton::profile::parse_trace_bytes("\x1f\x8b").ok());
}

// The reader takes its input a piece (256 KiB) at a time: strings, escapes, UTF-8 sequences and
// numbers cut anywhere between two pieces read the same. Shifting the trace by 0 to 40 bytes of
// leading blanks moves every boundary across them.
TEST(TraceEvents, ValuesCutBetweenPiecesReadTheSame) {
    std::string events;
    const int n = 6000;
    for (int i = 0; i < n; ++i) {
        if (i) events += ",\n";
        events += R"({"ph": "X", "cat": "kernel", "name": "k\u00e9\"é€𝄞_)" + std::to_string(i % 97) + R"(", "ts": )" +
                  std::to_string(i) + ".25e1, \"dur\": " + std::to_string(i % 13) + R"(, "args": {"bytes": )" +
                  std::to_string(1000000000000LL + i) +
                  R"(, "grid": [1, 2, 3], "note": "\\ \/ \b\f\n\r\t", "x": [true, false, null, -0.5E-3]}})";
    }
    const std::string body = R"({"traceEvents": [)" + events + "]}";
    ASSERT_GT(body.size(), 1u << 20);
    // And a few bytes a piece: every value cut somewhere.
    const baton::Result<Trace> whole = parse_trace(body);
    ASSERT_TRUE(whole.ok());
    for (std::size_t piece : {1u, 2u, 3u, 5u, 7u, 64u}) {
        baton::profile::TraceLimits small;
        small.piece_bytes = piece;
        const baton::Result<Trace> cut = parse_trace(body.substr(0, 20000) + "]}", small);
        const baton::Result<Trace> ref = parse_trace(body.substr(0, 20000) + "]}");
        ASSERT_EQ(cut.ok(), ref.ok()) << piece;
        if (ref.ok()) {
            ASSERT_EQ(cut->names, ref->names) << piece;
            ASSERT_EQ(cut->events.size(), ref->events.size()) << piece;
        } else {
            EXPECT_EQ(cut.error().message, ref.error().message) << piece;
        }
    }
    for (int shift = 0; shift <= 40; shift += 3) {
        const std::string text = std::string(static_cast<std::size_t>(shift), ' ') + body;
        baton::Result<Trace> t = parse_trace(text);
        ASSERT_TRUE(t.ok()) << shift << ": " << t.error().message;
        ASSERT_EQ(t->events.size(), static_cast<std::size_t>(n));
        for (int i = 0; i < n; i += 1 + i % 7) {
            const baton::profile::TraceEvent& e = t->events[static_cast<std::size_t>(i)];
            ASSERT_EQ(t->name_of(e), "k\u00e9\"é€𝄞_" + std::to_string(i % 97)) << shift << " " << i;
            ASSERT_DOUBLE_EQ(e.ts_us, (i + 0.25) * 10) << shift << " " << i;
            ASSERT_DOUBLE_EQ(e.dur_us, i % 13);
            ASSERT_EQ(e.bytes, 1000000000000LL + i);
        }
    }
}

// deviceProperties as Kineto writes them, hostile values left out; cuda_profiler_range events are
// kernels (counted apart); other categories are counted by name; an events array of anything but
// objects, or a bare array of non-events, is not a trace.
TEST(TraceEvents, DevicesRangeProfilerKernelsAndOtherCategories) {
    baton::Result<Trace> t = parse_trace(R"({"deviceProperties": [
        {"id": 0, "name": "Tesla V100-SXM2-32GB", "computeMajor": 7, "computeMinor": 0, "numSms": 80},
        {"id": "one", "name": 5, "computeMajor": 99999999999999999999, "computeMinor": -3}, 7, [1]],
      "traceEvents": [
        {"ph": "X", "cat": "cuda_profiler_range", "name": "k", "pid": 0, "tid": 0, "ts": 1, "dur": 2},
        {"ph": "X", "cat": "mtia_ccp_events", "name": "pe_exe", "ts": 1, "dur": 2},
        {"ph": "X", "cat": "mtia_ccp_events", "name": "pe_exe", "ts": 3, "dur": 2},
        {"ph": "i", "cat": "mtia_ccp_events", "name": "instant", "ts": 3}]})");
    ASSERT_TRUE(t.ok()) << t.error().message;
    ASSERT_EQ(t->devices.size(), 2u);
    EXPECT_EQ(t->devices[0].id, 0);
    EXPECT_EQ(t->devices[0].name, "Tesla V100-SXM2-32GB");
    EXPECT_EQ(t->devices[0].compute_major, 7);
    EXPECT_EQ(t->devices[0].compute_minor, 0);
    EXPECT_EQ(t->devices[1].id, -1);
    EXPECT_EQ(t->devices[1].compute_major, -1);
    EXPECT_EQ(t->devices[1].compute_minor, -1);
    EXPECT_EQ(t->range_profiler_kernels, 1u);
    EXPECT_EQ(t->events[0].category, Category::kernel);
    ASSERT_EQ(t->other_categories.size(), 1u);
    EXPECT_EQ(t->other_categories[0].first, "mtia_ccp_events");
    EXPECT_EQ(t->other_categories[0].second, 2u) << "complete events only";

    for (const char* not_trace :
         {"[[1, 2], [3]]", "[1]", "[\"a\"]", "[true]", R"({"traceEvents": [{"ph": "X"}, 2]})", R"([{"a": 1}])"}) {
        baton::Result<Trace> r = parse_trace(not_trace);
        ASSERT_FALSE(r.ok()) << not_trace;
        EXPECT_EQ(r.error().message.rfind("not a profiler trace: ", 0), 0u) << r.error().message;
    }
    baton::Result<Trace> empty = parse_trace("[]");
    ASSERT_TRUE(empty.ok()) << "the legacy profiler's trace of nothing";
    EXPECT_TRUE(empty->events.empty());
}

TEST(TraceEvents, StrictJsonIsRefusedAtItsByte) {
    const std::pair<const char*, const char*> cases[] = {
        {"{\"traceEvents\": [{\"name\": \"\xff\"}]}", "invalid UTF-8"},
        {"{\"traceEvents\": [{\"name\": \"\xc0\xaf\"}]}", "invalid UTF-8"},      // an overlong '/'
        {"{\"traceEvents\": [{\"name\": \"\xed\xa0\x80\"}]}", "invalid UTF-8"},  // a surrogate
        {"{\"traceEvents\": [{\"name\": \"\\ud800\"}]}", "lone high surrogate"},
        {"{\"traceEvents\": [{\"name\": \"\\udc00\"}]}", "lone low surrogate"},
        {"{\"traceEvents\": [{\"name\": \"a\tb\"}]}", "control character"},
        {"{\"traceEvents\": [{\"name\": \"\\x\"}]}", "invalid escape"},
        {"{\"traceEvents\": [{\"ts\": 01}]}", "invalid number"},
        {"{\"traceEvents\": [{\"ts\": 1.}]}", "invalid number"},
        {"{\"traceEvents\": [{\"ts\": -}]}", "invalid number"},
        {"{\"traceEvents\": [{\"ts\": .5}]}", "unexpected character"},
        {"{\"traceEvents\": [tru]}", "invalid literal"},
        {"{\"traceEvents\": [{\"a\" 1}]}", "expected ':'"},
        {"{\"traceEvents\": [{\"a\": 1,}]}", "expected '\"'"},
        {"{\"traceEvents\": [1 2]}", "expected ',' or ']'"},
        {"{\"traceEvents\": []} x", "more after the trace's end"},
        {"{\"traceEvents\": [{\"name\": \"abc", "unexpected end in a string"},
    };
    for (const auto& [text, why] : cases) {
        baton::Result<Trace> t = parse_trace(text);
        ASSERT_FALSE(t.ok()) << text;
        EXPECT_NE(t.error().message.find("not a trace's JSON at byte "), std::string::npos) << t.error().message;
        EXPECT_NE(t.error().message.find(why), std::string::npos) << text << ": " << t.error().message;
    }
    // Big and small numbers are numbers: the ones no int64 holds read as 0 (or the largest, when whole).
    baton::Result<Trace> t = parse_trace(R"({"traceEvents": [{"ph": "X", "ts": 1e400, "dur": 2,
        "args": {"bytes": 99999999999999999999, "stream": -99999999999999999999}}]})");
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->events[0].ts_us, 0);
    EXPECT_EQ(t->events[0].bytes, INT64_MAX);
    EXPECT_EQ(t->events[0].stream, 0);
}
