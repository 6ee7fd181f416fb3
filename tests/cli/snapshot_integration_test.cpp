// The real binary against real processes: a child that burns CPU and holds 500 MB is found
// with plausible figures; JSON Lines, Prometheus and text outputs; the fake GPUs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.hpp"

using namespace baton::test;
using nlohmann::json;

namespace {

std::vector<json> json_lines(const std::string& out) {
    std::vector<json> v;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) v.push_back(json::parse(line));
    return v;
}

}  // namespace

TEST(SnapshotIntegration, FindsABusyChildWithItsCpuAndMemory) {
    pid_t child = fork();
    if (child == 0) {
        execl("/usr/bin/python3", "python3", "-c",
              "import time\nb = b'x' * (500 * 2**20)\nprint('ready', flush=True)\nwhile True: pass\n", nullptr);
        _exit(127);
    }
    ASSERT_GT(child, 0);
    // Give it time to allocate (reading /proc until its RSS passes 500 MB).
    for (int i = 0; i < 100; ++i) {
        std::string statm = read_text("/proc/" + std::to_string(child) + "/statm");
        std::istringstream s(statm);
        unsigned long size = 0, rss = 0;
        s >> size >> rss;
        if (rss * static_cast<unsigned long>(sysconf(_SC_PAGESIZE)) >= 500ul << 20) break;
        usleep(100000);
    }
    auto r = run({baton_binary(), "snapshot", "--json", "--count", "2", "--interval", "1", "--no-gpus"});
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto snaps = json_lines(r.out);
    ASSERT_EQ(snaps.size(), 2u);
    const json* found = nullptr;
    for (const json& p : snaps[1]["processes"])
        if (p["pid"] == child) found = &p;
    ASSERT_NE(found, nullptr);
    EXPECT_NE((*found)["command"].get<std::string>().find("python3 -c"), std::string::npos);
    EXPECT_GE((*found)["rss_bytes"].get<std::uint64_t>(), 500ull << 20);
    EXPECT_LT((*found)["rss_bytes"].get<std::uint64_t>(), 700ull << 20);
    double cpu = (*found)["cpu_percent"].get<double>();
    EXPECT_GT(cpu, 50) << "a busy loop should use most of a core";
    EXPECT_LT(cpu, 110);
    EXPECT_EQ((*found)["ppid"], getpid());
    EXPECT_NEAR(snaps[1]["interval_seconds"].get<double>(), 1.0, 0.2);
}

TEST(SnapshotIntegration, SleepingChildIsInEverySnapshotWithOrWithoutIdleSkipping) {
    // A sleeping child's stat is skipped after the first reads (architecture.md, "Idle
    // processes"): it must still be listed every time, with its own figures.
    pid_t child = fork();
    if (child == 0) {
        execl("/bin/sleep", "sleep", "60", nullptr);
        _exit(127);
    }
    ASSERT_GT(child, 0);
    ASSERT_TRUE(eventually([&] { return read_text("/proc/" + std::to_string(child) + "/comm") == "sleep\n"; }, 10));
    TempDir d;
    d.write("full.toml", "[sample]\nskip_idle_processes = false\n");
    const std::string truth = read_text("/proc/" + std::to_string(child) + "/stat");
    std::istringstream after_name(truth.substr(truth.rfind(')') + 2));  // field 3 (state) onwards
    const std::vector<std::string> fields{std::istream_iterator<std::string>(after_name), {}};
    const std::uint64_t rss_pages = std::stoull(fields.at(24 - 3));
    for (const std::string& config : {std::string(), d.path() + "/full.toml"}) {
        std::vector<std::string> argv{baton_binary()};
        if (!config.empty()) argv.insert(argv.end(), {"--config", config});
        argv.insert(argv.end(), {"snapshot", "--json", "--count", "6", "--interval", "0.05", "--no-gpus"});
        auto r = run(argv);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        auto snaps = json_lines(r.out);
        ASSERT_EQ(snaps.size(), 6u);
        for (const json& s : snaps) {
            const json* found = nullptr;
            for (const json& p : s["processes"])
                if (p["pid"] == child) found = &p;
            ASSERT_NE(found, nullptr) << config;
            EXPECT_EQ((*found)["command"], "sleep 60");
            EXPECT_EQ((*found)["ppid"], getpid());
            EXPECT_EQ((*found)["state"], "S");
            EXPECT_EQ((*found)["cpu_percent"], 0);
            EXPECT_EQ((*found)["rss_bytes"], rss_pages * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)));
        }
    }
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
}

TEST(SnapshotIntegration, FirstSnapshotAlreadyHasRates) {
    auto r = run({baton_binary(), "snapshot", "--json", "--no-gpus"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_TRUE(j["cpu"].contains("utilization_percent"));
    EXPECT_TRUE(j["swap"].contains("in_bytes_per_second"));
    bool some_cpu = false;
    for (const json& p : j["processes"]) some_cpu |= p.contains("cpu_percent");
    EXPECT_TRUE(some_cpu);
}

TEST(SnapshotIntegration, JsonLinesBackToBack) {
    auto r = run({baton_binary(), "snapshot", "--json", "--count", "5", "--interval", "0"}, fake_env("eight-busy"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto snaps = json_lines(r.out);
    ASSERT_EQ(snaps.size(), 5u);
    EXPECT_LT(r.seconds, 5.0);
    for (const json& s : snaps) {
        EXPECT_EQ(s["gpu_status"], "ok");
        EXPECT_EQ(s["gpu_state"], "ok");
        EXPECT_EQ(s["gpus"].size(), 8u);
    }
    EXPECT_EQ(snaps[4]["gpus"][0]["utilization_percent"], 99);  // the scenario's last tick
}

TEST(SnapshotIntegration, NoProcessesIsNull) {
    auto r = run({baton_binary(), "snapshot", "--json", "--no-processes", "--no-gpus"});
    ASSERT_EQ(r.exit_code, 0);
    json j = json::parse(r.out);
    EXPECT_TRUE(j["processes"].is_null());
    EXPECT_EQ(j["gpu_status"], "GPU sampling disabled");
    EXPECT_EQ(j["gpu_state"], "disabled");
}

TEST(SnapshotIntegration, TextSummaryShowsGpusAndProcesses) {
    auto r = run({baton_binary(), "snapshot"}, fake_env("throttled"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("NVIDIA RTX A6000"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("hw_thermal_slowdown"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("processes; top"), std::string::npos) << r.out;
}

TEST(SnapshotIntegration, NoDriverStillWorks) {
    auto r = run({baton_binary(), "snapshot", "--json"}, {{"BATON_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_TRUE(j["gpus"].empty());
    EXPECT_NE(j["gpu_status"].get<std::string>().find("no NVIDIA driver"), std::string::npos);
    EXPECT_EQ(j["gpu_state"], "no_driver");
    EXPECT_FALSE(j["processes"].empty());
}

TEST(SnapshotIntegration, HungDriverDoesNotHangBaton) {
    auto env = fake_env("hang");
    baton::test::TempDir d;
    d.write("c.toml", "[gpu]\nnvml_deadline_ms = 200\n");
    auto r = run(
        {baton_binary(), "--config", d.path() + "/c.toml", "snapshot", "--json", "--count", "3", "--interval", "0.1"},
        env, 20);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LT(r.seconds, 3.0);
    auto snaps = json_lines(r.out);
    ASSERT_EQ(snaps.size(), 3u);
    EXPECT_NE(snaps[2]["gpu_status"].get<std::string>().find("did not return within 200 ms"), std::string::npos);
    EXPECT_EQ(snaps[2]["gpu_state"], "stale");
    EXPECT_TRUE(snaps[2]["gpus"][0]["stale"].get<bool>());
}

TEST(SnapshotIntegration, ClosedPipeEndsQuietly) {
    auto r =
        run({"/bin/sh", "-c", baton_binary() + " snapshot --json --count 1000 --interval 0 --no-gpus | head -c 10"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out.size(), 10u);
}

TEST(SnapshotIntegration, ProcRootFlagReadsAFixture) {
    baton::test::TempDir d;
    copy_fixture("machine", d.path());
    auto r = run({baton_binary(), "snapshot", "--json", "--no-gpus", "--proc-root", d.path() + "/proc", "--sys-root",
                  d.path() + "/sys"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_EQ(j["host"]["hostname"], "fixture-host");
    EXPECT_EQ(j["processes"].size(), 6u);
}

// A proc root that is not one (mistyped, empty) is an error, never an empty healthy machine.
TEST(SnapshotIntegration, AProcRootThatIsNotOneIsAnError) {
    baton::test::TempDir d;
    d.write("config.toml", "[sample]\nproc_root = \"" + d.path() + "\"\n");
    struct Case {
        std::vector<std::string> args;
        int exit_code;
    };
    const std::vector<Case> cases = {
        {{"snapshot", "--proc-root", "/nonexistent"}, 1},
        {{"snapshot", "--json", "--proc-root", d.path()}, 1},  // a directory without a stat file
        {{"top", "--once", "--proc-root", "/nonexistent"}, 1},
        {{"diagnose", "--duration", "1", "--proc-root", "/nonexistent"}, 3},  // cannot judge
        {{"--config", d.path() + "/config.toml", "run", "--no-db", "--", "true"}, 1},
    };
    for (const Case& c : cases) {
        std::vector<std::string> argv{baton_binary()};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        auto r = run(argv);
        SCOPED_TRACE(c.args[0] + " " + c.args[1]);
        EXPECT_EQ(r.exit_code, c.exit_code) << r.out << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_NE(r.err.find("/stat: No such file or directory (is "), std::string::npos) << r.err;
    }
}

// A FIFO or a device where a /proc file should be (a planted or broken tree) never blocks or
// floods a read: those figures are missing, the rest is there.
TEST(SnapshotIntegration, PlantedFifosAndDevicesNeverHang) {
    baton::test::TempDir d;
    copy_fixture("machine", d.path());
    const std::string proc = d.path() + "/proc";
    std::filesystem::remove(proc + "/meminfo");
    ASSERT_EQ(mkfifo((proc + "/meminfo").c_str(), 0600), 0);
    std::filesystem::remove(proc + "/loadavg");
    std::filesystem::create_symlink("/dev/zero", proc + "/loadavg");
    std::filesystem::remove(proc + "/100/cmdline");
    std::filesystem::create_symlink("/dev/urandom", proc + "/100/cmdline");
    auto r =
        run({baton_binary(), "snapshot", "--json", "--no-gpus", "--proc-root", proc, "--sys-root", d.path() + "/sys"},
            {}, 10);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LT(r.seconds, 5);
    json j = json::parse(r.out);
    EXPECT_EQ(j["host"]["hostname"], "fixture-host");
    EXPECT_EQ(j["processes"].size(), 6u);
}

// With a short interval the second snapshot is a full interval after the first (whose take
// includes the priming read): its rates cover 0.1 s, not 2 ms (false CPU peaks of 900 %).
TEST(SnapshotIntegration, EveryIntervalIsFullFromTheFirst) {
    for (int trial = 0; trial < 3; ++trial) {
        auto r = run({baton_binary(), "--config", "/dev/null", "snapshot", "--json", "--no-gpus", "--no-processes",
                      "--count", "4", "--interval", "0.1"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        std::istringstream lines(r.out);
        std::vector<double> t;
        for (std::string line; std::getline(lines, line);)
            t.push_back(json::parse(line)["interval_seconds"].get<double>());
        ASSERT_EQ(t.size(), 4u);
        for (std::size_t i = 1; i < t.size(); ++i) EXPECT_GT(t[i], 0.08) << "snapshot " << i << " of trial " << trial;
    }
}

// A libnvidia-ml whose loading never returns (a stuck driver load): baton answers without the GPU
// after its deadline and exits; exit() would wait for the loader's lock the stuck dlopen holds.
TEST(SnapshotIntegration, NvmlThatNeverLoadsDoesNotHangBaton) {
    baton::test::TempDir d;
    d.write("config.toml", "[gpu]\nnvml_deadline_ms = 300\n");
    auto env = fake_env("one-idle");
    env["BATON_FAKE_NVML_HANG_ON_LOAD"] = "1";
    for (const std::vector<std::string>& args : {std::vector<std::string>{"snapshot", "--json"},
                                                 {"diagnose", "--duration", "1", "--interval", "0.5"},
                                                 {"top", "--once"}}) {
        std::vector<std::string> argv{baton_binary(), "--config", d.path() + "/config.toml"};
        argv.insert(argv.end(), args.begin(), args.end());
        auto r = run(argv, env, 20);
        SCOPED_TRACE(args[0]);
        EXPECT_NE(r.exit_code, -1) << "killed after 20 s: baton hung";
        EXPECT_LT(r.seconds, 10);
        EXPECT_NE((r.out + r.err).find("dlopen did not return within 300 ms"), std::string::npos) << r.out << r.err;
    }
}

// A pod's trainer on the fake GPU, in a fixture /proc: its cgroup names the pod, the fake kubelet
// (tests/sample/fake_kubelet.py, real gRPC) says which pod the GPU was allocated to, and the
// snapshot, the job series and dcgm-exporter's pod labels all name it.
TEST(SnapshotIntegration, APodOnAGpuIsNamedThroughTheKubelet) {
    if (run({"/usr/bin/python3", "-c", "import grpc, google.protobuf"}).exit_code != 0)
        GTEST_SKIP() << "python3-grpcio and python3-protobuf are not installed (scripts/test.sh installs them)";
    TempDir d;
    copy_fixture("machine", d.path());
    // pid 9980 is the "throttled" scenario's first GPU process: the fixture's trainer, moved into a pod.
    const std::string uid = "4f2a3c1e-9b7d-4e0a-8c5f-1d2e3f4a5b6c";
    std::string stat = read_text(d.path() + "/proc/100/stat");
    stat.replace(0, 3, "9980");
    d.write("proc/9980/stat", stat);
    d.remove("proc/100/environ");  // the fixture's Slurm job holds no GPU here: the pod is GPU 0's one job
    for (const char* f : {"status", "cmdline", "io"})
        d.write(std::string("proc/9980/") + f, read_text(d.path() + "/proc/100/" + f));
    std::string scoped = uid;
    std::replace(scoped.begin(), scoped.end(), '-', '_');
    d.write("proc/9980/cgroup", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + scoped +
                                    ".slice/cri-containerd-" + std::string(64, 'e') + ".scope\n");
    d.write("pods.json", R"([{"name": "resnet-0", "namespace": "vision", "containers": [{"name": "trainer",
        "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ["GPU-tttttttt-0000-4000-8000-000000000000"]}]}]}])");
    const std::string socket = d.path() + "/kubelet.sock";
    const int kubelet = start_process(
        {"/usr/bin/python3", source_dir() + "/tests/sample/fake_kubelet.py", socket, d.path() + "/pods.json"}, {},
        d.path() + "/kubelet.log");
    for (int i = 0; i < 300 && read_text(d.path() + "/kubelet.log").find("ready") == std::string::npos; ++i)
        usleep(50000);
    d.write("c.toml", "[jobs]\nkubelet_socket = \"" + socket + "\"\nscontrol = \"\"\n[serve]\ndcgm_compat = true\n");
    const std::vector<std::string> base{baton_binary(), "--config",         d.path() + "/c.toml", "snapshot",
                                        "--proc-root",  d.path() + "/proc", "--sys-root",         d.path() + "/sys"};
    auto with = [&](std::initializer_list<std::string> more) {
        std::vector<std::string> argv = base;
        argv.insert(argv.end(), more);
        return run(argv, fake_env("throttled"));
    };
    CommandResult j = with({"--json"});
    CommandResult p = with({"--prometheus"});
    kill(kubelet, SIGTERM);
    waitpid(kubelet, nullptr, 0);
    ASSERT_EQ(j.exit_code, 0) << j.err;
    const json snap = json::parse(j.out);
    const json* pod = nullptr;
    for (const json& job : snap["jobs"])
        if (job["kind"] == "pod") pod = &job;
    ASSERT_NE(pod, nullptr) << snap["jobs"].dump();
    EXPECT_EQ((*pod)["label"], "pod:vision/resnet-0") << pod->dump();
    EXPECT_EQ((*pod)["id"], uid);
    EXPECT_EQ((*pod)["container"], "trainer");
    EXPECT_EQ((*pod)["names_from"], "kubelet");
    EXPECT_EQ((*pod)["gpus"], json::array({0}));
    EXPECT_EQ((*pod)["allocated_gpus"], json::array({0}));
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("baton_gpu_job_info{gpu=\"0\",uuid=\"GPU-tttttttt-0000-4000-8000-000000000000\","
                         "job_id=\"pod:vision/resnet-0\",kind=\"pod\",name=\"resnet-0\""),
              std::string::npos)
        << p.out;
    EXPECT_NE(p.out.find(",pod=\"resnet-0\",namespace=\"vision\",container=\"trainer\"} "), std::string::npos) << p.out;
}
