// baton doctor's checks on synthetic facts, and the PyTorch probe's answer parsing.
#include <gtest/gtest.h>

#include "doctor/checks.hpp"

using namespace baton;
using namespace baton::doctor;

namespace {

GpuInfo gpu(unsigned index) {
    GpuInfo g;
    g.index = index;
    g.uuid = "GPU-" + std::to_string(index) + "aaaaaaa-0000-4000-8000-000000000000";
    g.persistence_mode = true;
    g.ecc_uncorrected_volatile = 0;
    g.pcie_width = 16;
    g.pcie_width_max = 16;
    g.compute_mode = ComputeMode::shared;
    return g;
}

// A well set-up two-GPU box with PyTorch 2.3 for CUDA 12.1 on a 12.4 driver.
DoctorFacts good() {
    DoctorFacts f;
    f.queue.agent = true;
    f.queue.socket = "/run/baton/baton.sock";
    f.queue.job_cgroups = true;
    f.queue.cgroups = "a cgroup per job under /sys/fs/cgroup/system.slice/baton-queue.service/jobs (cpuset, memory)";
    f.queue.gpus = "3, 2, 0, 1";
    f.queue.gpus_count = 4;
    f.queue.gpus_free = 3;
    Snapshot& s = f.snapshot;
    s.gpu_status = "ok";
    s.gpu_state = GpuState::ok;
    s.gpu_driver_version = "550.54.15";
    s.gpu_nvml_version = "12.550.54.15";
    s.gpu_cuda_driver_version = "12.4";
    s.gpus = {gpu(0), gpu(1)};
    s.memory.shm_total_bytes = 32ull << 30;
    s.swap.total_bytes = 8ull << 30;
    NetworkStats eth;
    eth.name = "eth0";
    s.networks.push_back(eth);
    f.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
    f.limits.nofile = 1048576;
    f.torch.probed = true;
    f.torch.python = "python3";
    f.torch.python_version = "3.11.2";
    f.torch.torch_version = "2.3.1+cu121";
    f.torch.cuda_version = "12.1";
    f.torch.cudnn_version = "8.9.2";
    f.torch.nccl_version = "2.20.5";
    f.torch.cuda_available = true;
    f.torch.device_count = 2;
    return f;
}

const CheckItem& check(const std::vector<CheckItem>& items, const std::string& id) {
    for (const CheckItem& i : items)
        if (i.id == id) return i;
    throw std::runtime_error("no check " + id);
}

CheckStatus status(const DoctorFacts& f, const std::string& id) {
    return check(run_checks(f), id).status;
}

}  // namespace

TEST(DoctorChecks, AGoodBoxPassesEveryCheckInOrder) {
    auto items = run_checks(good());
    ASSERT_EQ(items.size(), check_ids().size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        EXPECT_EQ(items[i].id, check_ids()[i]);
        EXPECT_EQ(items[i].status, CheckStatus::pass) << items[i].id << ": " << items[i].detail;
    }
}

TEST(DoctorChecks, JobCgroupsOrAffinityOnly) {
    DoctorFacts f = good();
    auto c = check(run_checks(f), "job_cgroups");
    EXPECT_EQ(c.detail,
              "the agent on /run/baton/baton.sock gives a cgroup per job under "
              "/sys/fs/cgroup/system.slice/baton-queue.service/jobs (cpuset, memory)");
    f.queue.job_cgroups = false;
    f.queue.cgroups = "CPU affinity only: the agent runs in the root cgroup, not in one delegated to it";
    c = check(run_checks(f), "job_cgroups");
    EXPECT_EQ(c.status, CheckStatus::warn);
    EXPECT_NE(c.fix.find("deploy/baton-queue.service"), std::string::npos);
    f.queue.agent = false;
    c = check(run_checks(f), "job_cgroups");
    EXPECT_EQ(c.status, CheckStatus::skip);
    EXPECT_EQ(c.detail.rfind("no queue agent answers; one started now would give CPU affinity only", 0), 0u)
        << c.detail;
}

TEST(DoctorChecks, ConfigSaysWhatTheFilesSet) {
    DoctorFacts f = good();
    auto c = check(run_checks(f), "config");
    EXPECT_EQ(c.status, CheckStatus::pass);
    EXPECT_EQ(c.detail, "no config file; every key at its default");
    f.config.files = {"/etc/baton/baton.toml", "/home/me/.config/baton/baton.toml"};
    f.config.changed = {"history.db = \"/data/baton.db\"", "thresholds.cpu_alarm_percent = 85"};
    c = check(run_checks(f), "config");
    EXPECT_EQ(c.status, CheckStatus::pass);
    EXPECT_EQ(c.detail,
              "read /etc/baton/baton.toml, /home/me/.config/baton/baton.toml; 2 keys set: history.db = "
              "\"/data/baton.db\"; thresholds.cpu_alarm_percent = 85");
}

TEST(DoctorChecks, DriverAndCudaVersions) {
    DoctorFacts f = good();
    f.snapshot.gpu_cuda_driver_version = "11.8";  // older than torch's CUDA 12.1
    auto c = check(run_checks(f), "cuda_driver");
    EXPECT_EQ(c.status, CheckStatus::fail);
    EXPECT_NE(c.detail.find("11.8"), std::string::npos);
    f.snapshot.gpu_cuda_driver_version = "12.10";  // 12.10 > 12.4 numerically, not as text
    f.torch.cuda_version = "12.4";
    EXPECT_EQ(status(f, "cuda_driver"), CheckStatus::pass);
    f = good();
    f.snapshot.gpu_driver_version.reset();
    f.snapshot.gpus.clear();
    f.snapshot.gpu_status = "no NVIDIA driver: libnvidia-ml.so.1 not found";
    f.snapshot.gpu_state = GpuState::no_driver;
    auto d = check(run_checks(f), "nvidia_driver");
    EXPECT_EQ(d.status, CheckStatus::fail);
    EXPECT_EQ(d.detail, "no NVIDIA driver: libnvidia-ml.so.1 not found");
    EXPECT_FALSE(d.fix.empty());
}

TEST(DoctorChecks, PyTorchVersionsAndBuilds) {
    DoctorFacts f = good();
    f.torch.torch_version = "1.5.1";
    EXPECT_EQ(status(f, "pytorch"), CheckStatus::fail);
    f = good();
    f.torch.cuda_version.reset();  // CPU-only wheel on a GPU box
    EXPECT_EQ(status(f, "pytorch_cuda"), CheckStatus::fail);
    f = good();
    f.torch.cuda_available = false;
    EXPECT_EQ(status(f, "pytorch_cuda"), CheckStatus::fail);
    f = good();
    f.torch.cudnn_version = "7.6.5";
    EXPECT_EQ(status(f, "cudnn"), CheckStatus::fail);
    f = good();
    f.torch = TorchFacts{};
    f.torch.probed = true;
    f.torch.python = "python3";
    f.torch.error = "cannot import torch: ModuleNotFoundError: No module named 'torch'";
    auto items = run_checks(f);
    EXPECT_EQ(check(items, "pytorch").status, CheckStatus::warn) << "python3 runs, without torch";
    EXPECT_EQ(check(items, "pytorch").detail, "python3: " + f.torch.error) << "the interpreter asked, named";
    f.torch.executable = "/root/.pyenv/versions/3.11.7/bin/python3";
    f.torch.python_version = "3.11.7";
    f.torch.elsewhere = "PyTorch is in /usr/bin/python3 (Python 3.11.2): give --python /usr/bin/python3";
    items = run_checks(f);
    EXPECT_EQ(check(items, "pytorch").detail,
              "python3 (/root/.pyenv/versions/3.11.7/bin/python3, Python 3.11.7): " + f.torch.error);
    EXPECT_EQ(check(items, "pytorch").fix, f.torch.elsewhere + ".");
    EXPECT_EQ(check(items, "nccl").status, CheckStatus::skip);
    f.torch.error = "python3 did not answer within 20 s";
    EXPECT_EQ(status(f, "pytorch"), CheckStatus::warn);
}

TEST(DoctorChecks, CudaVisibleDevicesMustNameGpus) {
    DoctorFacts f = good();
    f.env["CUDA_VISIBLE_DEVICES"] = "0,1";
    EXPECT_EQ(status(f, "cuda_visible_devices"), CheckStatus::pass);
    f.env["CUDA_VISIBLE_DEVICES"] = "GPU-1aaa";  // a UUID prefix
    EXPECT_EQ(status(f, "cuda_visible_devices"), CheckStatus::pass);
    f.env["CUDA_VISIBLE_DEVICES"] = "0,2";
    auto c = check(run_checks(f), "cuda_visible_devices");
    EXPECT_EQ(c.status, CheckStatus::fail);
    EXPECT_NE(c.detail.find("no GPU 2"), std::string::npos) << c.detail;
    f.env["CUDA_VISIBLE_DEVICES"] = "GPU-ffff,99999999999999999999";
    EXPECT_EQ(status(f, "cuda_visible_devices"), CheckStatus::fail);
    f.env["CUDA_VISIBLE_DEVICES"] = "";
    EXPECT_EQ(status(f, "cuda_visible_devices"), CheckStatus::warn);
    f.env.erase("CUDA_DEVICE_ORDER");
    EXPECT_EQ(status(f, "cuda_device_order"), CheckStatus::warn);
}

TEST(DoctorChecks, GpuStateHostLimitsAndVariables) {
    DoctorFacts f = good();
    f.snapshot.gpus[1].persistence_mode = false;
    f.snapshot.gpus[0].ecc_uncorrected_volatile = 3;
    f.snapshot.gpus[1].pcie_width = 8;
    f.snapshot.gpus[0].compute_mode = ComputeMode::prohibited;
    f.snapshot.memory.shm_total_bytes = 64ull << 20;
    f.limits.memlock_bytes = 8 << 20;
    f.limits.nofile = 1024;
    f.snapshot.swap.total_bytes = 0;
    f.env["NCCL_P2P_DISABLE"] = "1";
    f.env["NCCL_SOCKET_IFNAME"] = "ib";
    f.env["CUDA_LAUNCH_BLOCKING"] = "1";
    f.env["CUDA_INJECTION64_PATH"] = "/opt/profiler.so";
    auto items = run_checks(f);
    EXPECT_EQ(check(items, "persistence_mode").status, CheckStatus::warn);
    EXPECT_EQ(check(items, "ecc").status, CheckStatus::fail);
    EXPECT_EQ(check(items, "pcie_link").status, CheckStatus::warn);
    EXPECT_EQ(check(items, "compute_mode").status, CheckStatus::fail);
    EXPECT_EQ(check(items, "shm_size").status, CheckStatus::warn);
    EXPECT_EQ(check(items, "memlock").status, CheckStatus::warn);
    EXPECT_EQ(check(items, "open_files").status, CheckStatus::warn);
    EXPECT_EQ(check(items, "swap").status, CheckStatus::warn);
    const CheckItem& nccl = check(items, "nccl_env");
    EXPECT_EQ(nccl.status, CheckStatus::warn);
    EXPECT_NE(nccl.detail.find("NCCL_P2P_DISABLE=1"), std::string::npos);
    EXPECT_NE(nccl.detail.find("NCCL_SOCKET_IFNAME=ib names no interface"), std::string::npos) << nccl.detail;
    const CheckItem& harmful = check(items, "harmful_env");
    EXPECT_NE(harmful.detail.find("CUDA_INJECTION64_PATH"), std::string::npos);
    EXPECT_NE(harmful.detail.find("CUDA_LAUNCH_BLOCKING=1"), std::string::npos);
    f.env["NCCL_SOCKET_IFNAME"] = "^docker,lo";           // exclusions cannot be wrong
    EXPECT_EQ(status(f, "nccl_env"), CheckStatus::warn);  // (P2P still disabled)
    f.env.erase("NCCL_P2P_DISABLE");
    EXPECT_EQ(status(f, "nccl_env"), CheckStatus::pass);
    f.env["NCCL_SOCKET_IFNAME"] = "=eth";  // exact match: eth0 is not eth
    EXPECT_EQ(status(f, "nccl_env"), CheckStatus::warn);
}

TEST(DoctorChecks, OrphanedGpuProcess) {
    DoctorFacts f = good();
    ProcessInfo p;
    p.pid = 4242;
    p.ppid = 1;
    p.name = "python";
    p.user = "alice";
    f.snapshot.processes.push_back(p);
    GpuProcess gp;
    gp.pid = 4242;
    gp.used_memory_bytes = 10ull << 30;
    f.snapshot.gpus[0].processes.push_back(gp);
    auto c = check(run_checks(f), "orphaned_gpu_processes");
    EXPECT_EQ(c.status, CheckStatus::warn);
    EXPECT_NE(c.detail.find("pid 4242 (python, alice) holds 10.0 GiB on GPU0"), std::string::npos) << c.detail;
}

TEST(DoctorChecks, ProbeAnswerParsing) {
    TorchFacts t;
    ASSERT_TRUE(
        parse_torch_probe("noise\n{\"python\": \"3.11.2\", \"torch\": \"2.1.0\", \"cuda\": null, "
                          "\"cuda_available\": false}\n",
                          t));
    EXPECT_EQ(t.torch_version, "2.1.0");
    EXPECT_FALSE(t.cuda_version.has_value());
    TorchFacts u;
    EXPECT_FALSE(parse_torch_probe("", u));
    EXPECT_FALSE(parse_torch_probe("{not json", u));
    EXPECT_FALSE(parse_torch_probe("{\"torch\": 5}", u));  // no python version: not the probe's answer
    EXPECT_FALSE(parse_torch_probe(std::string(100000, '{'), u));
}

// queue_gpus: the pool as the agent gives it, a warning when it cannot read the GPUs, skipped without one.
TEST(DoctorChecks, TheQueuesGpusInTheOrderItGivesThem) {
    DoctorFacts f = good();
    EXPECT_EQ(check(run_checks(f), "queue_gpus").detail,
              "GPU 3, 2, 0, 1 (in the order given; [queue] gpus and prefer), 3 of 4 free now");
    f.queue.gpus_problem = "NVML did not answer within 2000 ms";
    EXPECT_EQ(check(run_checks(f), "queue_gpus").status, CheckStatus::warn);
    f.queue.gpus_problem.clear();
    f.queue.gpus = "";
    f.queue.gpus_count = 0;
    EXPECT_NE(check(run_checks(f), "queue_gpus").detail.find("CPU jobs only"), std::string::npos);
    f.queue.agent = false;
    EXPECT_EQ(check(run_checks(f), "queue_gpus").status, CheckStatus::skip);
}
