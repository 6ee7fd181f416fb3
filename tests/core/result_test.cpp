// Result and Error: the code travels with the message through context(), a caller tests the code,
// and a Result read the wrong way round stops the program with a message instead of throwing.
#include "core/result.hpp"

#include <gtest/gtest.h>

using namespace baton;

namespace {

Result<int> parse_positive(int v) {
    if (v < 0) return make_error(ErrorCode::invalid_argument, "negative: " + std::to_string(v));
    if (v == 0) return make_error("zero");
    return v;
}

}  // namespace

TEST(Result, ValueAndErrorWithTheirCode) {
    Result<int> good = parse_positive(3);
    ASSERT_TRUE(good.ok());
    EXPECT_EQ(*good, 3);
    EXPECT_FALSE(good.is(ErrorCode::failed));  // a value is no error of any kind

    Result<int> bad = parse_positive(-2);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message, "negative: -2");
    EXPECT_TRUE(bad.is(ErrorCode::invalid_argument));
    EXPECT_FALSE(bad.is(ErrorCode::failed));
    EXPECT_EQ(bad.value_or(7), 7);

    EXPECT_TRUE(parse_positive(0).is(ErrorCode::failed));  // make_error(message) is the plain kind
}

TEST(Result, ContextPrefixesTheMessageAndKeepsTheCode) {
    Result<int> r = parse_positive(-1).context("launch: --nnodes");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "launch: --nnodes: negative: -1");
    EXPECT_TRUE(r.is(ErrorCode::invalid_argument));

    Result<int> v = parse_positive(5).context("unused");
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, 5);

    const Error e = make_error(ErrorCode::not_found, "no such run 9");
    const Error outer = e.context("report");
    EXPECT_EQ(outer.message, "report: no such run 9");
    EXPECT_TRUE(outer.is(ErrorCode::not_found));
    EXPECT_EQ(e.message, "no such run 9");  // the lvalue is left as it was
}

TEST(Result, StatusCarriesNoValue) {
    const Status ok = Ok{};
    EXPECT_TRUE(ok.ok());
    const Status failed = make_error(ErrorCode::timed_out, "no answer within 5 s");
    EXPECT_TRUE(failed.is(ErrorCode::timed_out));
}

TEST(Result, CodeNamesAreDistinct) {
    const ErrorCode all[] = {ErrorCode::failed,         ErrorCode::invalid_argument,  ErrorCode::not_found,
                             ErrorCode::not_executable, ErrorCode::permission_denied, ErrorCode::unavailable,
                             ErrorCode::disconnected,   ErrorCode::timed_out};
    for (ErrorCode a : all) {
        EXPECT_EQ(error_code_from_name(error_code_name(a)), a) << error_code_name(a);
        for (ErrorCode b : all) {
            if (a != b) {
                EXPECT_STRNE(error_code_name(a), error_code_name(b));
            }
        }
    }
    EXPECT_EQ(error_code_from_name("no_such_code"), std::nullopt);
    EXPECT_EQ(error_code_from_name(""), std::nullopt);
}

TEST(ResultDeathTest, ReadingTheWrongSideStopsWithAMessage) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            Result<int> r = parse_positive(-4);
            (void)*r;
        },
        "internal error: the value of a failed result: negative: -4");
    EXPECT_DEATH(
        {
            Result<int> r = parse_positive(4);
            (void)r.error();
        },
        "internal error: the error of a result that holds a value");
}
