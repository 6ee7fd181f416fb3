// `baton doctor` as a user runs it: on this machine (no GPU, no torch), with the fake NVML, with
// a Python that answers like a CUDA build of PyTorch, and with one that hangs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "test_support.hpp"

using namespace baton::test;
using nlohmann::json;

namespace {

std::map<std::string, std::string> checks_of(const std::string& out) {
    std::map<std::string, std::string> m;
    const json doc = json::parse(out);
    for (const json& c : doc["checks"]) m[c["id"].get<std::string>()] = c["status"].get<std::string>();
    return m;
}

// An executable script standing in for python3 (the probe passes "-c SCRIPT"; it ignores them).
std::string fake_python(const TempDir& d, const std::string& name, const std::string& body) {
    d.write(name, "#!/bin/sh\n" + body + "\n");
    const std::string path = d.path() + "/" + name;
    chmod(path.c_str(), 0755);
    return path;
}

}  // namespace

TEST(DoctorIntegration, ThisMachineWithoutGpuOrTorch) {
    auto r = run({baton_binary(), "--config", "/dev/null", "doctor", "--python", "/nonexistent/python3", "--json"},
                 {{"BATON_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
    EXPECT_EQ(r.exit_code, 1) << r.err;  // the driver check fails
    auto c = checks_of(r.out);
    EXPECT_EQ(c.size(), 22u);
    EXPECT_EQ(c["config"], "pass");
    EXPECT_EQ(c["job_cgroups"], "skip");  // (no queue agent answers in this test's environment)
    EXPECT_EQ(c["queue_gpus"], "skip");
    EXPECT_EQ(c["nvidia_driver"], "fail");
    // The Python named with --python must answer: it fails, with the reason.
    EXPECT_EQ(c["pytorch"], "fail");
    EXPECT_NE(r.out.find("cannot run /nonexistent/python3: No such file or directory"), std::string::npos) << r.out;
    // The default python3 may be missing: then the PyTorch checks are skipped, saying why.
    auto absent = run({baton_binary(), "--config", "/dev/null", "doctor", "--json"},
                      {{"BATON_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}, {"PATH", "/nonexistent"}});
    EXPECT_EQ(checks_of(absent.out)["pytorch"], "skip") << absent.out;
    EXPECT_NE(absent.out.find("python3 not found"), std::string::npos) << absent.out;
    EXPECT_EQ(c["persistence_mode"], "skip");
    auto text = run({baton_binary(), "--config", "/dev/null", "doctor", "--no-torch"},
                    {{"BATON_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
    EXPECT_EQ(text.exit_code, 1);
    EXPECT_NE(text.out.find("FAIL  nvidia_driver"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("fix: Install the NVIDIA driver"), std::string::npos);
    EXPECT_NE(text.out.find("skipped\n"), std::string::npos);
    EXPECT_TRUE(text.err.empty()) << text.err;
}

// The config line names the file given and the keys it changes, from the same key table the
// parser reads.
TEST(DoctorIntegration, TheConfigLineSaysWhatTheFileSets) {
    TempDir d;
    d.write("baton.toml", "[serve]\nlisten = \"0.0.0.0:9000\"\n[thresholds]\ncpu_alarm_percent = 85\n");
    auto r = run({baton_binary(), "--config", d.path() + "/baton.toml", "doctor", "--no-torch"},
                 {{"BATON_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"},
                  {"BATON_SYSTEM_CONFIG", "/nonexistent"},
                  {"XDG_CONFIG_HOME", d.path() + "/none"}});
    EXPECT_NE(r.out.find("ok    config                   read " + d.path() +
                         "/baton.toml; 2 keys set: serve.listen = \"0.0.0.0:9000\"; thresholds.cpu_alarm_percent = 85"),
              std::string::npos)
        << r.out;
}

TEST(DoctorIntegration, FakeGpusAndACudaBuildOfTorch) {
    TempDir d;
    const std::string python = fake_python(
        d, "python3",
        "echo '{\"python\": \"3.11.2\", \"torch\": \"2.3.1+cu121\", \"cuda\": \"12.1\", \"cuda_available\": true, "
        "\"device_count\": 8, \"cudnn\": \"8.9.2\", \"nccl\": \"2.20.5\"}'");
    auto env = fake_env("eight-busy");
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
    env["CUDA_VISIBLE_DEVICES"] = "0,1,9";  // GPU 9 does not exist
    auto r = run({baton_binary(), "--config", "/dev/null", "doctor", "--python", python, "--json"}, env);
    auto c = checks_of(r.out);
    EXPECT_EQ(c["nvidia_driver"], "pass");
    EXPECT_EQ(c["cuda_driver"], "pass");  // the fake driver supports 12.4
    EXPECT_EQ(c["pytorch"], "pass");
    EXPECT_EQ(c["pytorch_cuda"], "pass");
    EXPECT_EQ(c["cudnn"], "pass");
    EXPECT_EQ(c["nccl"], "pass");
    EXPECT_EQ(c["cuda_device_order"], "pass");
    EXPECT_EQ(c["cuda_visible_devices"], "fail");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find("driver 550.54.15"), std::string::npos) << r.out;
}

TEST(DoctorIntegration, HangingPythonIsCutOff) {
    TempDir d;
    const std::string python = fake_python(d, "python3", "exec sleep 60");
    auto r = run({baton_binary(), "--config", "/dev/null", "doctor", "--python", python, "--timeout", "1", "--json",
                  "--no-gpus"},
                 {}, 30);
    EXPECT_LT(r.seconds, 10.0);
    auto c = checks_of(r.out);
    EXPECT_EQ(c["pytorch"], "warn");
    EXPECT_NE(r.out.find("did not answer within 1 s"), std::string::npos) << r.out;
}

// An interpreter without torch (a venv of its own, as a pyenv build without it): the check names it
// (its path and version) and the interpreter on this machine that has torch, to give --python.
TEST(DoctorIntegration, APythonWithoutTorchIsNamedWithOneThatHasIt) {
    TempDir d;
    const std::string venv = d.path() + "/no-torch";
    ASSERT_EQ(run({"/usr/bin/python3", "-m", "venv", "--without-pip", venv}, {}, 120).exit_code, 0);
    auto r = run({baton_binary(), "--config", "/dev/null", "doctor", "--python", venv + "/bin/python", "--no-gpus"}, {},
                 120);
    EXPECT_NE(r.out.find("FAIL  pytorch                  " + venv + "/bin/python (Python 3."), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("): cannot import torch: ModuleNotFoundError"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("fix: PyTorch is in "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("/usr/bin/python3 (Python 3."), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(": give --python /"), std::string::npos) << r.out;
}
