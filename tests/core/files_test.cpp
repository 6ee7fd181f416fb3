// Whole-file writes that a reader sees all or none of, and small-file reads with a ceiling: the
// reports and summaries at a user's path, the queue's specs and statuses.
#include "core/files.hpp"

#include <filesystem>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.hpp"

using namespace baton;

namespace {

using test::read_text;

// How many names `dir` holds, hidden ones too (a temporary file left behind would show here).
std::size_t entries(const std::string& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
    return n;
}

}  // namespace

TEST(Files, WriteReplacesWholeAndLeavesNoTemporaryFile) {
    test::TempDir d;
    const std::string path = d.path() + "/report.html";
    ASSERT_TRUE(write_file_atomically(path, "first").ok());
    EXPECT_EQ(read_text(path), "first");
    ASSERT_TRUE(write_file_atomically(path, std::string(1 << 20, 'x')).ok());
    EXPECT_EQ(read_text(path).size(), 1u << 20);
    ASSERT_TRUE(write_file_atomically(path, "").ok());
    EXPECT_EQ(read_text(path), "");
    EXPECT_EQ(entries(d.path()), 1u);
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << "reports hold command lines";
}

TEST(Files, ALinkAtThePathIsReplacedNotFollowed) {
    test::TempDir d;
    const std::string victim = d.path() + "/victim", path = d.path() + "/out.json";
    d.write("victim", "keep");
    ASSERT_EQ(symlink(victim.c_str(), path.c_str()), 0);
    ASSERT_TRUE(write_file_atomically(path, "new").ok());
    EXPECT_EQ(read_text(victim), "keep");
    struct stat st {};
    ASSERT_EQ(lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(read_text(path), "new");
}

TEST(Files, FailuresAreCodedAndNameThePath) {
    test::TempDir d;
    const Status missing = write_file_atomically(d.path() + "/no/such/dir/x", "t");
    ASSERT_FALSE(missing.ok());
    EXPECT_TRUE(missing.is(ErrorCode::not_found));
    EXPECT_NE(missing.error().message.find("cannot write " + d.path() + "/no/such/dir/x: "), std::string::npos)
        << missing.error().message;

    const Status dir = write_file_atomically(d.path() + "/", "t");
    ASSERT_FALSE(dir.ok());
    EXPECT_TRUE(dir.is(ErrorCode::invalid_argument));
    EXPECT_NE(dir.error().message.find("names a directory"), std::string::npos);

    // A file that stands where a directory must be: neither written nor a crash.
    d.write("plain", "x");
    EXPECT_FALSE(write_file_atomically(d.path() + "/plain/x", "t").ok());

    if (geteuid() != 0) {  // root writes anywhere
        const std::string locked = d.path() + "/locked";
        ASSERT_EQ(mkdir(locked.c_str(), 0500), 0);
        const Status denied = write_file_atomically(locked + "/x", "t");
        EXPECT_TRUE(denied.is(ErrorCode::permission_denied)) << (denied.ok() ? "written" : denied.error().message);
    }
}

TEST(Files, ReadSmallFileKeepsToItsCeiling) {
    test::TempDir d;
    const std::string path = d.path() + "/status";
    d.write("status", std::string(5000, 's'));
    EXPECT_EQ(read_small_file(path).value_or("").size(), 5000u);
    EXPECT_EQ(read_small_file(path, 5000).value_or("").size(), 5000u);
    EXPECT_EQ(read_small_file(path, 4999), std::nullopt) << "longer than the ceiling: none, not a prefix";
    EXPECT_EQ(read_small_file(d.path() + "/absent"), std::nullopt);
    EXPECT_EQ(read_small_file(d.path()), std::nullopt) << "a directory cannot be read as a file";
    EXPECT_EQ(read_small_file("/proc/self/stat", 8192).value_or("").empty(), false) << "files of size 0 in /proc";
}

TEST(Files, RemoveTreeRemovesEverythingBelowButNotWhatALinkNames) {
    test::TempDir d;
    d.write("outside/keep", "mine");
    const std::string tree = d.path() + "/tree";
    std::filesystem::create_directories(tree + "/stacks/deeper");
    d.write("tree/sitecustomize.py", "x");
    d.write("tree/stacks/1.txt", "y");
    d.write("tree/stacks/deeper/2.txt", "z");
    ASSERT_EQ(symlink((d.path() + "/outside").c_str(), (tree + "/link").c_str()), 0);
    remove_tree(tree);
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(tree)));
    EXPECT_EQ(read_text(d.path() + "/outside/keep"), "mine") << "the link was removed, not followed";
    remove_tree(d.path() + "/absent");  // nothing there: nothing happens
}
