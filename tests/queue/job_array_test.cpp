// Job arrays: the --array spec and the --array-file lines read into elements (hostile forms refused
// with the flag named, never a crash or a billion elements), and each element's command.
#include <gtest/gtest.h>

#include "queue/job_array.hpp"

using namespace baton;
using namespace baton::queue;

namespace {

JobArray spec(const std::string& text, unsigned* max_parallel = nullptr) {
    unsigned mp = 0;
    Result<JobArray> a = parse_array_spec(text, mp);
    EXPECT_TRUE(a.ok()) << text << ": " << a.error().message;
    if (max_parallel) *max_parallel = mp;
    return a.ok() ? *a : JobArray{};
}

std::string refusal(const std::string& text) {
    unsigned mp = 0;
    Result<JobArray> a = parse_array_spec(text, mp);
    EXPECT_FALSE(a.ok()) << text;
    if (a.ok()) return "";
    EXPECT_EQ(a.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(a.error().message.find("--array"), std::string::npos) << a.error().message;
    return a.error().message;
}

}  // namespace

TEST(JobArray, RangesStepsListsAndTheirLimit) {
    EXPECT_EQ(spec("1-5").indices, (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(spec("1-5").values, (std::vector<std::string>{"1", "2", "3", "4", "5"}));
    EXPECT_EQ(spec("0-9:4").indices, (std::vector<std::int64_t>{0, 4, 8}));
    EXPECT_EQ(spec("7").indices, (std::vector<std::int64_t>{7}));
    EXPECT_EQ(spec("1,5,7").indices, (std::vector<std::int64_t>{1, 5, 7}));
    EXPECT_EQ(spec("3-4,10,0").indices, (std::vector<std::int64_t>{3, 4, 10, 0}));  // the order given
    unsigned mp = 0;
    EXPECT_EQ(spec("1-1000%4", &mp).indices.size(), 1000u);
    EXPECT_EQ(mp, 4u);
    spec("1-3", &mp);
    EXPECT_EQ(mp, 0u);
    EXPECT_EQ(spec("1-10000").indices.size(), kMaxArrayElements);
}

TEST(JobArray, HostileSpecsAreRefusedWithTheFlagNamed) {
    for (const char* bad : {"",      "%2",   "a",    "-1", "1-",    "-",    "1--2",          "1-2-3",
                            "5-1",   "1,,2", "1,",   ",1", "1-3:0", "1-3:", "4:2",           "1-3%0",
                            "1-3%x", "1-3%", "1 -3", "+1", "0x10",  "1.5",  "1-99999999999", "18446744073709551617",
                            "1,1",   "1-3,2"})
        refusal(bad);
    EXPECT_NE(refusal("5-1").find("ends before it starts"), std::string::npos);
    EXPECT_NE(refusal("1-3,2").find("index 2 is given twice"), std::string::npos);
    // Too many, refused before a single element is made (not a billion strings first).
    EXPECT_NE(refusal("0-1000000000").find("more than 10000"), std::string::npos);
    EXPECT_NE(refusal("1-10001").find("more than 10000"), std::string::npos);
    EXPECT_NE(refusal("1-5000,6000-11000").find("more than 10000"), std::string::npos);
}

TEST(JobArray, AFileGivesOneElementPerNonBlankLineNumberedAsInTheFile) {
    Result<JobArray> a = parse_array_file("--lr 0.1\r\n\n   \n--lr 0.01\nlast line without newline", "sweep.txt", true);
    ASSERT_TRUE(a.ok()) << a.error().message;
    EXPECT_EQ(a->indices, (std::vector<std::int64_t>{1, 4, 5}));
    EXPECT_EQ(a->values, (std::vector<std::string>{"--lr 0.1", "--lr 0.01", "last line without newline"}));
    EXPECT_FALSE(a->append);
    EXPECT_TRUE(parse_array_file("x\n", "f", false)->append);  // no {}: the line is the last argument

    Result<JobArray> empty = parse_array_file("\n \n\t\n", "f", true);
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.error().message.find("--array-file f: no lines"), std::string::npos);
    ASSERT_FALSE(parse_array_file(std::string("ok\nbad\0line\n", 12), "f", true).ok());
    EXPECT_NE(parse_array_file(std::string("ok\nbad\0line\n", 12), "f", true).error().message.find("line 2"),
              std::string::npos);
    std::string many;
    for (std::size_t i = 0; i <= kMaxArrayElements; ++i) many += "x\n";
    Result<JobArray> too_many = parse_array_file(many, "f", true);
    ASSERT_FALSE(too_many.ok());
    EXPECT_NE(too_many.error().message.find("more than 10000"), std::string::npos);
}

TEST(JobArray, EachElementsCommandHasEveryPlaceholderReplaced) {
    const std::vector<std::string> argv{"python", "train.py", "--seed={}", "--out", "run-{}-{}", "{x}"};
    EXPECT_TRUE(has_placeholder(argv));
    EXPECT_FALSE(has_placeholder({"python", "train.py", "{ }", "{"}));
    EXPECT_EQ(element_argv(argv, "7", false),
              (std::vector<std::string>{"python", "train.py", "--seed=7", "--out", "run-7-7", "{x}"}));
    // The value is inserted as it is, once: a value holding "{}" is not replaced again.
    EXPECT_EQ(element_argv({"echo", "{}"}, "a {} b", false), (std::vector<std::string>{"echo", "a {} b"}));
    EXPECT_EQ(element_argv({"echo"}, "--lr 0.1", true), (std::vector<std::string>{"echo", "--lr 0.1"}));
}
