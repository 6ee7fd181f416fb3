// The stack handler's pure parts: its header line read back (hostile lines refused), the environment
// a job gets (PYTHONPATH with the shim first, never an empty entry), the files it installs.
#include "hang/stack_shim.hpp"

#include <csignal>
#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>

#include "test_support.hpp"

using baton::hang::install_shim;
using baton::hang::parse_stacks_header;
using baton::hang::shim_environment;
using baton::hang::shim_source;
using baton::hang::stacks_signal;

TEST(StackShim, TheHeaderIsReadBackAndAnythingElseRefused) {
    auto h = parse_stacks_header("# baton stacks: pid 1234 start 5678901 exe /opt/my env/bin/python3.11\n");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->pid, 1234);
    EXPECT_EQ(h->start_ticks, 5678901u);
    EXPECT_EQ(h->exe, "/opt/my env/bin/python3.11") << "the executable is the rest of the line, spaces and all";
    for (const char* bad : {"", "\n", "# baton stacks: pid", "# baton stacks: pid 12 start 3 exe ",
                            "# baton stacks: pid -1 start 3 exe /x", "# baton stacks: pid 0 start 3 exe /x",
                            "# baton stacks: pid 12 start x exe /x", "# baton stacks: pid 12 begin 3 exe /x",
                            "# baton stacks: pid 99999999999999999999 start 3 exe /x",
                            "Thread 0x00007f (most recent call first):", "# baton stacks: pid 12 start 3"})
        EXPECT_EQ(parse_stacks_header(bad), std::nullopt) << bad;
}

TEST(StackShim, TheEnvironmentPutsTheShimFirstAndNeverAddsAnEmptyEntry) {
    using Env = std::vector<std::pair<std::string, std::string>>;
    const std::string sig = std::to_string(stacks_signal());
    EXPECT_EQ(shim_environment("/r/python", "/r/stacks", std::nullopt),
              (Env{{"PYTHONPATH", "/r/python"}, {"BATON_STACKS_DIR", "/r/stacks"}, {"BATON_STACKS_SIGNAL", sig}}));
    EXPECT_EQ(shim_environment("/r/python", "/r/stacks", "")[0].second, "/r/python")
        << "an empty PYTHONPATH: no trailing ':' (it would put the working directory on the path)";
    EXPECT_EQ(shim_environment("/r/python", "/r/stacks", "/home/u/lib:/x")[0].second, "/r/python:/home/u/lib:/x");
    EXPECT_GE(stacks_signal(), SIGRTMIN);
    EXPECT_LE(stacks_signal(), SIGRTMAX);
    EXPECT_NE(stacks_signal(), SIGUSR1);
    EXPECT_NE(stacks_signal(), SIGUSR2);
}

// The queue's agent writes one shim for every job, readable by other users' jobs when it is root.
TEST(StackShim, OneShimDirectoryForManyJobsTakesTheModeAsked) {
    baton::test::TempDir d;
    const std::string shim = d.path() + "/python";
    ASSERT_TRUE(baton::hang::install_shim_dir(shim, 0755).ok());
    struct stat st {};
    ASSERT_EQ(stat(shim.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0755u);
    ASSERT_EQ(stat((shim + "/sitecustomize.py").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    EXPECT_EQ(baton::test::read_text(shim + "/sitecustomize.py"), std::string(shim_source()));
    // An agent started again (its source may be newer, its mode another): rewritten, the mode set.
    std::ofstream(shim + "/sitecustomize.py") << "an older shim";
    ASSERT_EQ(chmod(shim.c_str(), 0700), 0);
    ASSERT_TRUE(baton::hang::install_shim_dir(shim, 0755).ok());
    ASSERT_EQ(stat(shim.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0755u);
    EXPECT_EQ(baton::test::read_text(shim + "/sitecustomize.py"), std::string(shim_source()));
    const baton::Status bad = baton::hang::install_shim_dir(d.path() + "/absent/python", 0700);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("cannot create " + d.path() + "/absent/python"), std::string::npos);
}

TEST(StackShim, InstallWritesTheShimAndPrivateDirectories) {
    baton::test::TempDir d;
    ASSERT_TRUE(install_shim(d.path() + "/python", d.path() + "/stacks").ok());
    EXPECT_EQ(baton::test::read_text(d.path() + "/python/sitecustomize.py"), std::string(shim_source()));
    struct stat st {};
    ASSERT_EQ(stat((d.path() + "/stacks").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(stat((d.path() + "/python/baton-stacks-shim").c_str(), &st), 0) << "the marker a nested shim skips";
    EXPECT_TRUE(install_shim(d.path() + "/python", d.path() + "/stacks").ok()) << "again: the same";
    const baton::Status bad = install_shim(d.path() + "/absent/deeper/python", d.path() + "/stacks");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("cannot create " + d.path() + "/absent/deeper/python"), std::string::npos)
        << bad.error().message;
}
