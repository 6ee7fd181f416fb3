// Loading a library at run time: the loader's reason when it cannot, the first entry point of a
// list that the library has.
#include <gtest/gtest.h>

#include <cstring>

#include "core/shared_library.hpp"

using namespace baton;

TEST(SharedLibrary, AMissingLibraryIsNotFoundWithTheLoadersReason) {
    Result<void*> h = open_shared_library("/nonexistent/libnothing.so.1");
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.error().code, ErrorCode::not_found);
    EXPECT_NE(h.error().message.find("/nonexistent/libnothing.so.1"), std::string::npos) << h.error().message;
}

TEST(SharedLibrary, TheFirstEntryPointItHas) {
    Result<void*> h = open_shared_library("libc.so.6");
    ASSERT_TRUE(h.ok()) << h.error().message;
    using Strlen = std::size_t (*)(const char*);
    Strlen fn = nullptr;
    std::string which;
    ASSERT_TRUE(resolve_symbol(*h, fn, {"baton_no_such_function", "strlen"}, &which));
    EXPECT_EQ(which, "strlen");
    EXPECT_EQ(fn("abc"), 3u);
    Strlen none = nullptr;
    EXPECT_FALSE(resolve_symbol(*h, none, {"baton_no_such_function"}));
    EXPECT_EQ(none, nullptr) << "left alone when none is there";
}
