// disk_space_low end to end: a real tmpfs of the test's own (mounted in a temporary directory,
// unmounted at the end), filled at a steady rate by `baton run`'s command: the run names the
// filesystem, its pace and when it is full, while the command runs; baton snapshot shows the mount
// under node_exporter's names. Needs root to mount (skipped otherwise, and said).
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <unistd.h>

#include "test_support.hpp"

using namespace baton::test;

namespace {

// A tmpfs of `megabytes` at `dir`, unmounted when it goes.
class Tmpfs {
  public:
    Tmpfs(const std::string& dir, int megabytes) : dir_(dir) {
        const std::string options = "size=" + std::to_string(megabytes) + "m,mode=0755";
        mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) == 0;
    }
    ~Tmpfs() {
        if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    }
    bool mounted() const { return mounted_; }

  private:
    std::string dir_;
    bool mounted_ = false;
};

}  // namespace

TEST(DiskSpace, ATmpfsFillingAtASteadyRateIsProjectedFull) {
    if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
    TempDir d;
    const std::string fs = d.path() + "/scratch";
    ASSERT_EQ(::mkdir(fs.c_str(), 0755), 0);
    Tmpfs t(fs, 64);
    if (!t.mounted()) GTEST_SKIP() << "this machine does not let the test mount a tmpfs";
    // The command writes 64 KiB every 0.1 s (about 600 kB/s) into the tmpfs for 40 s: 64 MiB would be
    // full in under two minutes, a quarter of the default 120: critical, once 30 s of readings show it.
    const std::string writer = "cd " + fs +
                               " && i=0; while [ $i -lt 400 ]; do head -c 65536 /dev/zero >> ckpt.bin; "
                               "sleep 0.1; i=$((i+1)); done";
    CommandResult r = run({baton_binary(), "--config", "/dev/null", "run", "--no-gpus", "--no-db", "--interval", "0.5",
                           "--", "/bin/sh", "-c", writer},
                          {{"BATON_SYSTEM_CONFIG", "/dev/null"}}, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string live = "baton: critical disk_space_low [fs:" + fs + "]: " + fs + " fills at ";
    EXPECT_NE(r.err.find(live), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("full in about"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("written by pid"), std::string::npos) << r.err;
    // The space, as node_exporter names it.
    CommandResult s = run({baton_binary(), "--config", "/dev/null", "snapshot", "--prometheus", "--no-gpus"},
                          {{"BATON_SYSTEM_CONFIG", "/dev/null"}});
    EXPECT_NE(s.out.find("node_filesystem_size_bytes{device=\"tmpfs\",fstype=\"tmpfs\",mountpoint=\"" + fs +
                         "\"} 67108864\n"),
              std::string::npos)
        << s.out;
    EXPECT_NE(s.out.find("node_filesystem_avail_bytes{device=\"tmpfs\",fstype=\"tmpfs\",mountpoint=\"" + fs + "\"} "),
              std::string::npos);
}
