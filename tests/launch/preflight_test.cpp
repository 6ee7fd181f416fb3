// The pre-flight checks of `baton launch`: interfaces NCCL and gloo are told to use, debugging
// switches left on, the GPUs the ranks may use, the master port.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launch/preflight.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::launch;

namespace {

EnvLookup lookup(const std::map<std::string, std::string>& m) {
    return [m](const std::string& k) {
        auto it = m.find(k);
        return it == m.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
}

const std::vector<InterfaceState> kIfs = {{"eth0", true}, {"eth1", false}, {"ib0", true}, {"lo", true}};

std::string notes(const std::map<std::string, std::string>& env) {
    std::string out;
    for (const PreflightNote& n : check_launch_environment(lookup(env), kIfs))
        out += std::string(n.error ? "error: " : "warning: ") + n.text + "\n";
    return out;
}

}  // namespace

TEST(Preflight, SocketInterfacesMustExistAndBeUp) {
    EXPECT_EQ(notes({}), "");
    EXPECT_EQ(notes({{"NCCL_SOCKET_IFNAME", "eth"}}), "");         // a prefix: eth0 is up
    EXPECT_EQ(notes({{"NCCL_SOCKET_IFNAME", "^lo,docker"}}), "");  // excludes: eth0 and ib0 remain
    EXPECT_EQ(notes({{"NCCL_SOCKET_IFNAME", "nosuchif"}}),
              "error: NCCL_SOCKET_IFNAME=nosuchif names no interface of this machine (it has: eth0, eth1, ib0, lo)\n");
    EXPECT_EQ(notes({{"NCCL_SOCKET_IFNAME", "=eth1"}}),
              "error: NCCL_SOCKET_IFNAME==eth1 names only interfaces that are down (eth1)\n");
    EXPECT_EQ(notes({{"NCCL_SOCKET_IFNAME", "=eth"}}).substr(0, 36), "error: NCCL_SOCKET_IFNAME==eth names");
    // gloo takes exact names.
    EXPECT_EQ(notes({{"GLOO_SOCKET_IFNAME", "eth0"}}), "");
    EXPECT_NE(notes({{"GLOO_SOCKET_IFNAME", "eth"}}).find("error: GLOO_SOCKET_IFNAME"), std::string::npos);
}

TEST(Preflight, DebuggingSwitchesLeftOnAreWarnings) {
    const std::string n = notes({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_IB_DISABLE", "1"}, {"CUDA_LAUNCH_BLOCKING", "1"}});
    EXPECT_NE(n.find("warning: NCCL_P2P_DISABLE=1 is set"), std::string::npos) << n;
    EXPECT_NE(n.find("warning: NCCL_IB_DISABLE=1 is set"), std::string::npos) << n;
    EXPECT_NE(n.find("warning: CUDA_LAUNCH_BLOCKING=1 is set"), std::string::npos) << n;
    EXPECT_EQ(notes({{"CUDA_LAUNCH_BLOCKING", "0"}, {"NCCL_P2P_DISABLE", ""}}), "");
}

TEST(Preflight, TheRanksGpusComeFromCudaVisibleDevicesElseTheMachine) {
    Snapshot machine;
    for (unsigned i = 0; i < 4; ++i) {
        GpuInfo g;
        g.index = i;
        machine.gpus.push_back(g);
    }
    using V = std::vector<std::string>;
    EXPECT_EQ(visible_gpus(lookup({}), machine), (V{"0", "1", "2", "3"}));
    EXPECT_EQ(visible_gpus(lookup({{"CUDA_VISIBLE_DEVICES", "2, 3"}}), machine), (V{"2", "3"}));
    EXPECT_EQ(visible_gpus(lookup({{"CUDA_VISIBLE_DEVICES", "GPU-ab,MIG-cd"}}), machine), (V{"GPU-ab", "MIG-cd"}));
    // CUDA stops at the first entry it cannot read; "" hides every GPU.
    EXPECT_EQ(visible_gpus(lookup({{"CUDA_VISIBLE_DEVICES", "1,-1,2"}}), machine), (V{"1"}));
    EXPECT_EQ(visible_gpus(lookup({{"CUDA_VISIBLE_DEVICES", ""}}), machine), V{});
}

TEST(Preflight, ADriverOlderThanPyTorchsCudaStopsTheLaunch) {
    Snapshot machine;
    machine.gpu_driver_version = "535.54";
    machine.gpu_cuda_driver_version = "12.2";
    machine.gpus.resize(2);
    doctor::TorchFacts t;
    t.probed = true;
    t.torch_version = "2.4.0";
    t.cuda_version = "12.4";
    t.cuda_available = true;
    t.nccl_version = "2.20.5";
    std::vector<PreflightNote> n = check_torch_against_driver(machine, t, 2);
    ASSERT_EQ(n.size(), 1u);
    EXPECT_TRUE(n[0].error);
    EXPECT_NE(n[0].text.find("the driver supports CUDA up to 12.2, PyTorch was built for CUDA 12.4"), std::string::npos)
        << n[0].text;
    machine.gpu_cuda_driver_version = "12.4";
    EXPECT_TRUE(check_torch_against_driver(machine, t, 2).empty());
    t.nccl_version.reset();  // a build without NCCL, ranks on GPUs: a warning
    n = check_torch_against_driver(machine, t, 2);
    ASSERT_EQ(n.size(), 1u);
    EXPECT_FALSE(n[0].error);
    EXPECT_NE(n[0].text.find("NCCL"), std::string::npos);
}

TEST(Preflight, APortInUseIsNamedAndAFreeOneIsFound) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(fd, 1), 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    const int port = ntohs(a.sin_port);
    Status s = check_port_free(port);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("the master port " + std::to_string(port) + " is in use"), std::string::npos);
    close(fd);
    EXPECT_TRUE(check_port_free(port).ok());
    Result<int> free = pick_free_port();
    ASSERT_TRUE(free.ok());
    EXPECT_GT(*free, 0);
    EXPECT_TRUE(check_port_free(*free).ok());
}

TEST(Preflight, InterfacesAreReadFromSysfs) {
    test::TempDir d;
    d.write("eth0/operstate", "up\n");
    d.write("lo/operstate", "unknown\n");
    d.write("eth9/operstate", "down\n");
    const std::vector<InterfaceState> ifs = read_interfaces(d.path());
    ASSERT_EQ(ifs.size(), 3u);
    EXPECT_EQ(ifs[0].name, "eth0");
    EXPECT_TRUE(ifs[0].up);
    EXPECT_EQ(ifs[1].name, "eth9");
    EXPECT_FALSE(ifs[1].up);
    EXPECT_TRUE(ifs[2].up);  // loopback says "unknown"
}

TEST(Preflight, TheTorchProbeIsAskedAgainOnlyWhenTorchOrTheDriverChanged) {
    test::TempDir d;
    // A stand-in interpreter: finds "torch" in the temporary directory, and answers the probe
    // (counting how often it was asked).
    d.write("torch/__init__.py", "");
    d.write("torch/version.py", "__version__ = '2.4.0'\n");
    d.write("python",
            "#!/bin/sh\ncase \"$2\" in\n*find_spec*) echo '" + d.path() + "/torch/__init__.py' ;;\n*) echo x >> '" +
                d.path() +
                "/probes'; echo '{\"python\": \"3.11.2\", \"torch\": \"2.4.0\", \"cuda\": \"12.4\", \"nccl\": "
                "\"2.20.5\", \"cuda_available\": true, \"device_count\": 1}' ;;\nesac\n");
    chmod((d.path() + "/python").c_str(), 0755);
    const std::string python = d.path() + "/python", cache = d.path() + "/cache";
    auto probes = [&] { return test::read_text(d.path() + "/probes").size() / 2; };
    doctor::TorchFacts t = launch::cached_torch_probe(python, "550.54", cache, 10);
    EXPECT_EQ(t.torch_version, std::optional<std::string>("2.4.0"));
    EXPECT_EQ(t.nccl_version, std::optional<std::string>("2.20.5"));
    EXPECT_EQ(probes(), 1u);
    t = cached_torch_probe(python, "550.54", cache, 10);  // from the cache
    EXPECT_EQ(t.cuda_version, std::optional<std::string>("12.4"));
    EXPECT_TRUE(t.cuda_available);
    EXPECT_EQ(probes(), 1u);
    cached_torch_probe(python, "560.10", cache, 10);  // another driver
    EXPECT_EQ(probes(), 2u);
    d.write("torch/version.py", "__version__ = '2.5.0'\n# upgraded\n");  // pip install -U torch
    cached_torch_probe(python, "560.10", cache, 10);
    EXPECT_EQ(probes(), 3u);
    // No torch: an error, no probe.
    d.write("python2", "#!/bin/sh\necho\n");
    chmod((d.path() + "/python2").c_str(), 0755);
    t = cached_torch_probe(d.path() + "/python2", "550.54", cache, 10);
    EXPECT_FALSE(t.torch_version);
    EXPECT_EQ(t.error, "no torch module");
    EXPECT_EQ(probes(), 3u);
}

// The interpreter the ranks would run: refused when it cannot be run or has no torch, naming it and
// where torch is; nothing said when it has torch.
TEST(Preflight, AnInterpreterWithoutTorchStopsTheLaunchAndNamesOneWithIt) {
    baton::doctor::PythonFound asked;
    asked.command = "python3";
    asked.executable = "/root/.pyenv/versions/3.11.7/bin/python3";
    asked.prefix = "/root/.pyenv/versions/3.11.7";
    asked.version = "3.11.7";
    baton::doctor::PythonFound system = asked;
    system.command = "/usr/bin/python3";
    system.executable = "/usr/bin/python3";
    system.prefix = "/usr";
    system.version = "3.11.2";
    system.torch = true;
    std::vector<PreflightNote> notes = check_python(asked, {system});
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_TRUE(notes[0].error);
    EXPECT_EQ(notes[0].text,
              "python3 (/root/.pyenv/versions/3.11.7/bin/python3, Python 3.11.7) cannot import torch: every rank would "
              "stop at `import torch` (ModuleNotFoundError). PyTorch is in /usr/bin/python3 (Python 3.11.2): give "
              "--python /usr/bin/python3 (a script that needs no PyTorch runs with --no-python python3 SCRIPT)");
    notes = check_python(asked, {});
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].text.find("no Python found here has PyTorch"), std::string::npos) << notes[0].text;
    EXPECT_TRUE(check_python(system, {}).empty());
    baton::doctor::PythonFound missing;
    missing.command = "python3";
    missing.error = "python3 not found";
    notes = check_python(missing, {});
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_TRUE(notes[0].error);
    EXPECT_EQ(notes[0].text, "python3 not found (--python names the interpreter that runs the script)");
}

// The interpreters worth asking: the active environments first, PATH's, a .venv here and at home, the
// system's; each path once, and only files that can be run.
TEST(Preflight, ThePythonCandidatesInTheOrderAUserMeansThem) {
    baton::test::TempDir d;
    for (const char* dir : {"/venv/bin", "/conda/bin", "/work/.venv/bin", "/home/.venv/bin"}) {
        std::filesystem::create_directories(d.path() + dir);
        d.write(std::string(dir).substr(1) + "/python", "#!/bin/sh\n");
        chmod((d.path() + dir + "/python").c_str(), 0755);
    }
    d.write("home/.venv/bin/python3", "not executable");
    const std::vector<std::string> c = baton::doctor::python_candidates(
        {{"VIRTUAL_ENV", d.path() + "/venv"}, {"CONDA_PREFIX", d.path() + "/conda"}, {"HOME", d.path() + "/home"}},
        d.path() + "/work");
    ASSERT_GE(c.size(), 6u);
    EXPECT_EQ(c[0], d.path() + "/venv/bin/python");
    EXPECT_EQ(c[1], d.path() + "/conda/bin/python");
    EXPECT_EQ(c[2], "python3");
    EXPECT_EQ(c[3], "python");
    EXPECT_EQ(c[4], d.path() + "/work/.venv/bin/python");
    EXPECT_EQ(c[5], d.path() + "/home/.venv/bin/python");
    std::set<std::string> once(c.begin(), c.end());
    EXPECT_EQ(once.size(), c.size());
    // The same directory as the active environment and the working directory's: once.
    const std::vector<std::string> same =
        baton::doctor::python_candidates({{"VIRTUAL_ENV", d.path() + "/work/.venv"}}, d.path() + "/work");
    EXPECT_EQ(same[0], d.path() + "/work/.venv/bin/python");
    EXPECT_EQ(std::count(same.begin(), same.end(), d.path() + "/work/.venv/bin/python"), 1);
}
