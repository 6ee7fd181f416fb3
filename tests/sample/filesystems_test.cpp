// Filesystems: the mounts that count (mountinfo, recorded and hostile), which one holds a path,
// fdinfo's flags, the fill trend's rate and steps, where a process writes and which processes count.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "sample/linux/filesystem_space.hpp"
#include "sample/linux/mounts.hpp"
#include "sample/linux/written_paths.hpp"
#include "sample/process_lookup.hpp"
#include "sample/sampler.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::os;

TEST(Mounts, RealMountsOnlyAsNodeExporterCountsThem) {
    // A recorded Debian 12 GPU node's mountinfo, shortened, with an NFS share, a scratch tmpfs, a
    // path with a space, a stacked mount, and a container's overlay root.
    const auto m = parse_mountinfo(
        "22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
        "23 28 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
        "24 28 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=32g\n"
        "28 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n"
        "30 24 0:25 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw\n"
        "33 22 0:28 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw\n"
        "90 28 259:3 / /data rw,relatime shared:40 - xfs /dev/nvme1n1 rw,attr2\n"
        "91 28 0:50 / /scratch rw,relatime shared:41 - tmpfs tmpfs rw,size=65536k\n"
        "92 28 0:51 / /mnt/team\\040share ro,relatime shared:42 - nfs4 fs1:/export/team rw,vers=4.2\n"
        "93 90 0:52 / /data rw,relatime shared:43 - ext4 /dev/sdb1 rw\n"
        "94 28 0:53 / /var/lib/docker/overlay2/abc/merged rw - overlay overlay rw\n"
        "95 28 0:54 / /snap/core/1 ro - squashfs /dev/loop0 ro\n"
        "96 28 0:55 / /run/user/1000 rw - tmpfs tmpfs rw\n"
        "garbage line\n"
        "97 28 0:56 / relative rw - ext4 /dev/x rw\n"
        "98 28 0:57 / /short rw\n");
    ASSERT_EQ(m.size(), 5u);
    EXPECT_EQ(m[0].mount_point, "/");
    EXPECT_EQ(m[0].device, "/dev/nvme0n1p2");
    EXPECT_EQ(m[0].fstype, "ext4");
    EXPECT_EQ(m[1].mount_point, "/data");
    EXPECT_EQ(m[1].device, "/dev/sdb1");  // mounted over: the newest hides the older
    EXPECT_EQ(m[2].mount_point, "/mnt/team share");
    EXPECT_TRUE(m[2].readonly);
    EXPECT_EQ(m[2].fstype, "nfs4");
    EXPECT_EQ(m[3].mount_point, "/run/user/1000");
    EXPECT_EQ(m[4].mount_point, "/scratch");
    // A container: its overlay root counts, image layers elsewhere do not.
    const auto c = parse_mountinfo("500 400 0:60 / / rw - overlay overlay rw,lowerdir=/a\n");
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].fstype, "overlay");
    // Which mount holds a path: the longest mount point at a '/' boundary.
    EXPECT_EQ(mount_of(m, "/data/ckpt/step100.pt")->mount_point, "/data");
    EXPECT_EQ(mount_of(m, "/database/x")->mount_point, "/");
    EXPECT_EQ(mount_of(m, "/scratch")->mount_point, "/scratch");
    EXPECT_EQ(mount_of({}, "/x"), nullptr);
}

TEST(Mounts, FdinfoFlags) {
    EXPECT_EQ(fdinfo_flags("pos:\t0\nflags:\t0100002\nmnt_id:\t28\n"), 0100002);
    EXPECT_EQ(fdinfo_flags("pos:\t0\nflags:\t02100000\n"), 02100000);
    EXPECT_EQ(fdinfo_flags("pos: 0\n"), -1);
    EXPECT_EQ(fdinfo_flags("flags:\tx"), -1);
}

namespace {

std::deque<std::pair<double, double>> points(const std::vector<std::pair<double, double>>& v) {
    return {v.begin(), v.end()};
}

}  // namespace

TEST(FilesystemTrend, SteadyFillStepsAndShrinking) {
    FilesystemStats f;
    // Steady: 1 MB/s for ten minutes.
    std::vector<std::pair<double, double>> steady;
    for (int i = 0; i <= 20; ++i) steady.emplace_back(1000 + 30 * i, 5e9 + 30e6 * i);
    fill_trend(points(steady), f);
    ASSERT_TRUE(f.fill_bytes_per_second);
    EXPECT_NEAR(*f.fill_bytes_per_second, 1e6, 1);
    EXPECT_DOUBLE_EQ(*f.fill_window_seconds, 600);
    EXPECT_FALSE(f.step_bytes);  // a stream, not steps
    // Checkpoints: 14 GB every 30 minutes over two hours, nothing in between.
    std::vector<std::pair<double, double>> steps;
    for (int i = 0; i <= 240; ++i) steps.emplace_back(30.0 * i, 100e9 + 14e9 * ((i + 20) / 60));
    fill_trend(points(steps), f);
    ASSERT_TRUE(f.step_bytes && f.step_interval_seconds);
    EXPECT_EQ(*f.step_bytes, 14000000000u);
    EXPECT_DOUBLE_EQ(*f.step_interval_seconds, 1800);
    EXPECT_NEAR(*f.fill_bytes_per_second, 4 * 14e9 / 7200, 1);
    // Shrinking (old checkpoints deleted), too short, or one point: no rate.
    fill_trend(points({{0, 5e9}, {600, 4e9}}), f);
    EXPECT_FALSE(f.fill_bytes_per_second);
    EXPECT_FALSE(f.step_bytes);
    fill_trend(points({{0, 5e9}, {20, 6e9}}), f);
    EXPECT_FALSE(f.fill_bytes_per_second);
    fill_trend(points({{0, 5e9}}), f);
    EXPECT_FALSE(f.fill_bytes_per_second);
}

TEST(FilesystemSpace, ReadsTheMountsOfThisMachine) {
    FilesystemSpace space("/proc");
    std::vector<FilesystemStats> out;
    space.fill(0, out);  // the first fill waits for the first reading
    ASSERT_FALSE(out.empty());
    const auto root =
        std::find_if(out.begin(), out.end(), [](const FilesystemStats& f) { return f.mount_point == "/"; });
    ASSERT_NE(root, out.end());
    ASSERT_TRUE(root->size_bytes && root->avail_bytes);
    EXPECT_GT(*root->size_bytes, 0u);
    EXPECT_LE(*root->avail_bytes, *root->size_bytes);
    EXPECT_FALSE(root->error);
    EXPECT_FALSE(space.mounts().empty());
    // A /proc without mountinfo (a fixture): none, and no wait past the deadline.
    FilesystemSpace none("/nonexistent", 5, 0.2);
    space.fill(1, out);
    std::vector<FilesystemStats> empty;
    none.fill(0, empty);
    EXPECT_TRUE(empty.empty());
}

namespace {

ProcessInfo process(std::uint32_t pid, std::uint32_t ppid) {
    ProcessInfo p;
    p.pid = pid;
    p.ppid = ppid;
    p.name = "p" + std::to_string(pid);
    return p;
}

}  // namespace

// The writers of each filesystem: a GPU process or a followed job's root with all its descendants
// (a checkpoint saver two generations down), and any heavy writer; never the rest, whose files are not read.
TEST(FilesystemWriters, AJobsTreeAndHeavyWritersOnly) {
    Snapshot snap;
    // pid: parent. 10 trains on a GPU; 11 is its child, 12 its grandchild; 20 runs under `baton run`
    // (a root), 5 is 21's child (pids wrapped: a child below its parent); 30 is unrelated; 31 writes 5 MB/s; 40 and 41
    // are each other's parent (a pid reused between the reads of the table), 50's parent is not in the table.
    for (auto [pid, ppid] : std::vector<std::pair<std::uint32_t, std::uint32_t>>{{1, 0},
                                                                                 {5, 21},
                                                                                 {10, 1},
                                                                                 {11, 10},
                                                                                 {12, 11},
                                                                                 {20, 1},
                                                                                 {21, 20},
                                                                                 {30, 1},
                                                                                 {31, 30},
                                                                                 {40, 41},
                                                                                 {41, 40},
                                                                                 {50, 999}})
        snap.processes.push_back(process(pid, ppid));
    find_process(snap, 10)->gpu_indices = {0};
    find_process(snap, 31)->write_bytes_per_second = 5e6;
    FilesystemStats data, scratch;
    data.mount_point = "/data";
    scratch.mount_point = "/scratch";
    snap.filesystems = {data, scratch};
    const std::vector<Mount> mounts = {
        {"/", "/dev/sda1", "ext4"}, {"/data", "/dev/sdb", "xfs"}, {"/scratch", "tmpfs", "tmpfs"}};
    std::vector<std::uint32_t> asked;
    const std::vector<std::string> on_data = {"/data/ckpt/step100.pt"}, on_scratch = {"/scratch/x"}, none;
    mark_filesystem_writers(snap, mounts, {20}, [&](const ProcessInfo& p) -> const std::vector<std::string>& {
        asked.push_back(p.pid);
        return p.pid == 12 || p.pid == 21 ? on_data : p.pid == 31 ? on_scratch : none;
    });
    std::sort(asked.begin(), asked.end());
    EXPECT_EQ(asked, (std::vector<std::uint32_t>{5, 10, 11, 12, 20, 21, 31}));
    EXPECT_EQ(snap.filesystems[0].writer_pids, (std::vector<std::uint32_t>{12, 21}));
    EXPECT_EQ(snap.filesystems[1].writer_pids, (std::vector<std::uint32_t>{31}));

    // Without a GPU process or a root, only heavy writers are asked.
    find_process(snap, 10)->gpu_indices.clear();
    for (FilesystemStats& f : snap.filesystems) f.writer_pids.clear();
    asked.clear();
    mark_filesystem_writers(snap, mounts, {}, [&](const ProcessInfo& p) -> const std::vector<std::string>& {
        asked.push_back(p.pid);
        return none;
    });
    EXPECT_EQ(asked, (std::vector<std::uint32_t>{31}));
}

// A real process's cwd and the files it holds open for writing (write-only, read-write, appending), not
// those it reads or its pipes and devices; cached until refresh_seconds pass or the pid is reused.
TEST(WrittenPaths, ARealProcessesCwdAndFilesOpenForWriting) {
    test::TempDir dir;
    for (const char* f : {"read.bin", "write.bin", "both.bin", "log.txt"}) dir.write(f, "x");
    const std::string p = dir.path();
    const pid_t child = fork();
    if (child == 0) {
        if (chdir(p.c_str()) != 0) _exit(1);
        // Only what this test opens: the test runner's log (stdout) and descriptors go.
        const int null = open("/dev/null", O_RDWR);
        if (null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) _exit(1);
        for (int fd = 3; fd < 1024; ++fd) close(fd);
        // Kept open across the sleep: read-only, write-only, read-write, append, a pipe, /dev/null.
        int pipe_fds[2];
        if (open("read.bin", O_RDONLY) < 0 || open("write.bin", O_WRONLY) < 0 || open("both.bin", O_RDWR) < 0 ||
            open("log.txt", O_WRONLY | O_APPEND) < 0 || pipe(pipe_fds) != 0 || open("/dev/null", O_WRONLY) < 0)
            _exit(1);
        execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
        _exit(1);
    }
    ASSERT_GT(child, 0);
    // exec keeps the descriptors (none is close-on-exec); wait until sleep runs.
    for (int i = 0; i < 100 && test::read_text("/proc/" + std::to_string(child) + "/comm") != "sleep\n"; ++i)
        usleep(20000);
    WrittenPaths written("/proc");
    std::vector<std::string> got = written.paths(static_cast<std::uint32_t>(child), 1, 0);
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got.front(), p);  // the cwd first
    std::sort(got.begin() + 1, got.end());
    EXPECT_EQ(std::vector<std::string>(got.begin() + 1, got.end()),
              (std::vector<std::string>{p + "/both.bin", p + "/log.txt", p + "/write.bin"}));
    // Cached: the same answer within refresh_seconds even after the process ended; read again after,
    // or at once for another process with that pid (a new start time).
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    EXPECT_EQ(written.paths(static_cast<std::uint32_t>(child), 1, 5).size(), 4u);
    EXPECT_TRUE(written.paths(static_cast<std::uint32_t>(child), 2, 6).empty());
}
