// Tying GPU use to processes by the device files they hold open (baton in a container, where NVML
// reports host pids): the link parser on hostile targets, the reader on a fixture /proc with fd
// links, and the join (a trainer whose workers inherited its descriptors; several holders).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sample/linux/gpu_device_files.hpp"
#include "sample/sampler.hpp"
#include "test_support.hpp"

using namespace baton;
using baton::os::nvidia_minor;

TEST(GpuDeviceFiles, OnlyTheGpuFilesCount) {
    EXPECT_EQ(nvidia_minor("/dev/nvidia0", "/dev"), 0u);
    EXPECT_EQ(nvidia_minor("/dev/nvidia12", "/dev"), 12u);
    EXPECT_EQ(nvidia_minor("/dev/nvidia3", "/dev/"), 3u);
    EXPECT_EQ(nvidia_minor("/x/dev/nvidia7", "/x/dev"), 7u);
    for (const char* other : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                              "/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia", "/dev/nvidia99999",
                              "/dev/nvidia1 (deleted)", "/devx/nvidia0", "/tmp/dev/nvidia0", "socket:[12345]",
                              "pipe:[1]", "anon_inode:[eventfd]", "", "/dev/nvidia-1", "/dev/nvidia1a"})
        EXPECT_FALSE(nvidia_minor(other, "/dev").has_value()) << other;
}

TEST(GpuDeviceFiles, ReadsTheLinksOfAFixtureProc) {
    test::TempDir d;
    const std::string fd = d.path() + "/proc/100/fd";
    std::filesystem::create_directories(fd);
    ASSERT_EQ(symlink("/dev/nvidia2", (fd + "/5").c_str()), 0);
    ASSERT_EQ(symlink("/dev/nvidiactl", (fd + "/6").c_str()), 0);
    ASSERT_EQ(symlink("/dev/nvidia0", (fd + "/7").c_str()), 0);
    ASSERT_EQ(symlink("/dev/nvidia2", (fd + "/8").c_str()), 0);
    ASSERT_EQ(symlink("/home/a/data.bin", (fd + "/9").c_str()), 0);
    os::GpuDeviceFiles files(d.path() + "/proc", "/dev");
    EXPECT_EQ(files.minors(100, 1, 3.0, 0.0), (std::vector<unsigned>{0, 2}));
    EXPECT_TRUE(files.minors(101, 1, 3.0, 0.0).empty());  // no such process
    // Cached until the refresh time, unless the pid was reused (another start time).
    ASSERT_EQ(unlink((fd + "/7").c_str()), 0);
    EXPECT_EQ(files.minors(100, 1, 3.5, 1.0), (std::vector<unsigned>{0, 2}));
    EXPECT_EQ(files.minors(100, 2, 3.5, 1.0), (std::vector<unsigned>{2}));
    ASSERT_EQ(unlink((fd + "/5").c_str()), 0);
    ASSERT_EQ(unlink((fd + "/8").c_str()), 0);
    EXPECT_TRUE(files.minors(100, 2, 3.6, 1.0 + os::GpuDeviceFiles::refresh_seconds).empty());
}

TEST(GpuDeviceFiles, ASleepingProcessIsReadAgainOnlyAfterTheLongRefresh) {
    // Its descriptors can change only when it runs; one that used no CPU keeps its reading for
    // idle_refresh_seconds, one that ran is read again after refresh_seconds.
    test::TempDir d;
    for (const char* pid : {"200", "201"}) {
        const std::string fd = d.path() + "/proc/" + pid + "/fd";
        std::filesystem::create_directories(fd);
        ASSERT_EQ(symlink("/dev/nvidia1", (fd + "/4").c_str()), 0);
    }
    os::GpuDeviceFiles files(d.path() + "/proc", "/dev");
    const double refresh = os::GpuDeviceFiles::refresh_seconds, idle = os::GpuDeviceFiles::idle_refresh_seconds;
    EXPECT_EQ(files.minors(200, 1, 7.0, 0.0), std::vector<unsigned>{1});  // asleep from here on
    EXPECT_EQ(files.minors(201, 1, 7.0, 0.0), std::vector<unsigned>{1});  // runs
    EXPECT_EQ(files.reads(), 2u);
    for (const char* pid : {"200", "201"}) ASSERT_EQ(unlink((d.path() + "/proc/" + pid + "/fd/4").c_str()), 0);
    EXPECT_EQ(files.minors(200, 1, 7.0, refresh + 1), std::vector<unsigned>{1});
    EXPECT_TRUE(files.minors(201, 1, 7.01, refresh + 1).empty());
    EXPECT_EQ(files.reads(), 3u);
    // The first long refresh comes after half to all of it (spread by pid), the next ones after all of it.
    EXPECT_EQ(files.minors(200, 1, 7.0, idle / 2 - 1), std::vector<unsigned>{1});
    EXPECT_EQ(files.reads(), 3u);
    EXPECT_TRUE(files.minors(200, 1, 7.0, idle).empty());
    EXPECT_EQ(files.reads(), 4u);
    ASSERT_EQ(symlink("/dev/nvidia3", (d.path() + "/proc/200/fd/4").c_str()), 0);
    EXPECT_TRUE(files.minors(200, 1, 7.0, 2 * idle - 1).empty());
    EXPECT_EQ(files.minors(200, 1, 7.0, 2 * idle), std::vector<unsigned>{3});
    ASSERT_EQ(unlink((d.path() + "/proc/200/fd/4").c_str()), 0);
    // A reused pid is read at once whatever its CPU time.
    ASSERT_EQ(symlink("/dev/nvidia0", (d.path() + "/proc/200/fd/4").c_str()), 0);
    EXPECT_EQ(files.minors(200, 9, 7.0, 2 * idle + 0.5), std::vector<unsigned>{0});
}

namespace {

ProcessInfo proc(std::uint32_t pid, std::uint32_t ppid) {
    ProcessInfo p;
    p.pid = pid;
    p.ppid = ppid;
    p.name = "python";
    p.command = "python train.py";
    return p;
}

GpuInfo gpu(unsigned index, unsigned minor, std::vector<std::uint32_t> host_pids) {
    GpuInfo g;
    g.index = index;
    g.minor_number = minor;
    for (std::uint32_t pid : host_pids) {
        GpuProcess gp;
        gp.pid = pid;
        gp.used_memory_bytes = 10ull << 30;
        g.processes.push_back(gp);
    }
    return g;
}

}  // namespace

TEST(GpuDeviceFiles, TheTrainerIsJoinedNotItsWorkers) {
    // In a container: trainer 7 with DataLoader workers 8 and 9 (they inherited its descriptors);
    // NVML reports the trainer as host pid 48211 on GPU1 (minor 3).
    Snapshot s;
    s.processes = {proc(1, 0), proc(7, 1), proc(8, 7), proc(9, 7), proc(12, 1)};
    s.gpus = {gpu(0, 0, {}), gpu(1, 3, {48211})};
    std::map<std::uint32_t, std::vector<unsigned>> open = {{7, {3}}, {8, {3}}, {9, {3}}};
    const std::vector<unsigned> none;
    auto minors = [&](const ProcessInfo& p) -> const std::vector<unsigned>& {
        auto it = open.find(p.pid);
        return it == open.end() ? none : it->second;
    };
    join_gpu_processes(s);
    EXPECT_FALSE(s.gpus[1].processes[0].local_pid);
    join_gpu_processes_by_device_files(s, minors);
    EXPECT_EQ(s.gpus[1].processes[0].local_pid, 7u);
    EXPECT_EQ(s.gpus[1].processes[0].our_pid(), 7u);
    EXPECT_EQ(s.processes[1].gpu_memory_bytes, 10ull << 30);
    EXPECT_EQ(s.processes[1].gpu_indices, std::vector<unsigned>{1});
    EXPECT_FALSE(s.processes[1].gpu_memory_ambiguous);
    EXPECT_TRUE(s.processes[2].gpu_indices.empty());  // the workers hold the file but are not the GPU's
    EXPECT_FALSE(s.processes[2].gpu_memory_bytes);

    // Two separate trainers on the same GPU and two NVML entries: which memory is whose is not known.
    Snapshot t;
    t.processes = {proc(1, 0), proc(7, 1), proc(12, 1)};
    t.gpus = {gpu(0, 5, {48211, 48300})};
    open = {{7, {5}}, {12, {5}}};
    join_gpu_processes(t);
    join_gpu_processes_by_device_files(t, minors);
    for (std::size_t i : {1, 2}) {
        EXPECT_EQ(t.processes[i].gpu_indices, std::vector<unsigned>{0});
        EXPECT_TRUE(t.processes[i].gpu_memory_ambiguous);
        EXPECT_FALSE(t.processes[i].gpu_memory_bytes);
    }
    EXPECT_FALSE(t.gpus[0].processes[0].local_pid);
}

TEST(GpuDeviceFiles, BatonsOwnNvmlDescriptorsDoNotMakeItAHolder) {
    // NVML opens the GPUs' files in baton too (no CUDA context). Here the test process (baton)
    // holds GPU 0's file and so does its child, the trainer NVML reports under a host pid: the
    // trainer is joined, as the topmost holder that is not baton.
    test::TempDir d;
    const std::string scenario = "one-idle";
    test::use_scenario(scenario);
    SamplerOptions o;
    o.dev_root = d.path() + "/dev";
    o.nvml.library_path = test::fake_nvml_library(scenario);
    o.priming_seconds = 0.05;
    std::filesystem::create_directories(o.dev_root);
    unsigned minor = 0;
    {
        Sampler probe(o);
        Snapshot snap;
        probe.take(snap);
        ASSERT_EQ(snap.gpus.size(), 1u);
        ASSERT_TRUE(snap.gpus[0].minor_number);
        minor = *snap.gpus[0].minor_number;
    }
    const std::string dev = o.dev_root + "/nvidia" + std::to_string(minor);
    std::ofstream(dev).put('\n');
    const int fd = open(dev.c_str(), O_RDONLY);  // inherited by the child below
    ASSERT_GE(fd, 0);
    const std::string list = d.path() + "/nvml-processes";
    std::ofstream(list) << "0 4194000 1073741824\n";  // a pid of the host's namespace, not ours
    setenv("BATON_FAKE_NVML_PROCESSES", list.c_str(), 1);
    pid_t child = 0;
    char sleep_path[] = "/bin/sleep", arg[] = "30";
    char* argv[] = {sleep_path, arg, nullptr};
    ASSERT_EQ(posix_spawn(&child, sleep_path, nullptr, nullptr, argv, environ), 0);

    Sampler s(o);
    Snapshot snap;
    s.take(snap);
    close(fd);
    unsetenv("BATON_FAKE_NVML_PROCESSES");
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    ASSERT_EQ(snap.gpus.at(0).processes.size(), 1u);
    EXPECT_EQ(snap.gpus[0].processes[0].local_pid, static_cast<std::uint32_t>(child));
    for (const ProcessInfo& p : snap.processes)
        EXPECT_TRUE(p.pid != static_cast<std::uint32_t>(getpid()) || p.gpu_indices.empty());
}
