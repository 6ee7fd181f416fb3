#include "doctor/checks.hpp"
#include "core/text_parse.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)
#include <fmt/ranges.h>

#include "sample/process_lookup.hpp"

namespace baton::doctor {

const char* check_status_name(CheckStatus s) {
    switch (s) {
        case CheckStatus::warn:
            return "warn";
        case CheckStatus::fail:
            return "fail";
        case CheckStatus::skip:
            return "skip";
        case CheckStatus::pass:
            break;
    }
    return "pass";
}

const std::vector<std::string>& check_ids() {
    static const std::vector<std::string> ids = {
        "nvidia_driver",
        "cuda_driver",
        "pytorch",
        "pytorch_cuda",
        "cudnn",
        "nccl",
        "cuda_visible_devices",
        "cuda_device_order",
        "persistence_mode",
        "ecc",
        "pcie_link",
        "compute_mode",
        "shm_size",
        "memlock",
        "open_files",
        "swap",
        "nccl_env",
        "harmful_env",
        "orphaned_gpu_processes",
        "job_cgroups",
        "queue_gpus",
        "config",
    };
    return ids;
}

namespace {

// "12.4" -> {12, 4}; missing parts are 0.
std::vector<int> version_parts(const std::string& v) {
    std::vector<int> out;
    std::stringstream s(v);
    std::string part;
    while (std::getline(s, part, '.')) {
        std::string_view digits = part;  // "0rc1" counts as 0: a version part's leading digits
        out.push_back(digits.empty() || digits[0] < '0' || digits[0] > '9'
                          ? 0
                          : static_cast<int>(text::take_u64(digits).value_or(0)));
    }
    return out;
}

bool version_less(const std::string& a, const std::string& b) {
    std::vector<int> x = version_parts(a), y = version_parts(b);
    x.resize(std::max(x.size(), y.size()));
    y.resize(x.size());
    return x < y;
}

std::string env(const DoctorFacts& f, const std::string& name) {
    auto it = f.env.find(name);
    return it == f.env.end() ? std::string() : it->second;
}

bool has_env(const DoctorFacts& f, const std::string& name) {
    return f.env.count(name) > 0;
}

CheckItem item(const std::string& id, CheckStatus status, std::string title, std::string detail, std::string fix = {}) {
    return CheckItem{id, status, std::move(title), std::move(detail), std::move(fix)};
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string part;
    while (std::getline(in, part, sep)) out.push_back(part);
    return out;
}

std::string gib(double bytes) {
    return format_gib(bytes);
}

void driver_checks(const DoctorFacts& f, std::vector<CheckItem>& out) {
    const Snapshot& s = f.snapshot;
    const bool have_gpus = !s.gpus.empty();
    if (s.gpu_driver_version) {
        out.push_back(
            item("nvidia_driver", CheckStatus::pass, "NVIDIA driver and NVML",
                 fmt::format("driver {}, NVML {}, {} GPU{}", *s.gpu_driver_version, s.gpu_nvml_version.value_or("?"),
                             s.gpus.size(), s.gpus.size() == 1 ? "" : "s")));
    } else {
        out.push_back(item("nvidia_driver", CheckStatus::fail, "NVIDIA driver and NVML", s.gpu_status,
                           "Install the NVIDIA driver (Debian/Ubuntu: the nvidia-driver package, or NVIDIA's CUDA "
                           "repository) and check that nvidia-smi works; in a container, run it with --gpus all."));
    }
    if (!s.gpu_cuda_driver_version) {
        out.push_back(item("cuda_driver", have_gpus ? CheckStatus::warn : CheckStatus::skip, "CUDA driver version",
                           "not reported by NVML"));
    } else if (f.torch.cuda_version && version_less(*s.gpu_cuda_driver_version, *f.torch.cuda_version)) {
        out.push_back(item("cuda_driver", CheckStatus::fail, "CUDA driver version",
                           fmt::format("the driver supports CUDA up to {}, PyTorch was built for CUDA {}",
                                       *s.gpu_cuda_driver_version, *f.torch.cuda_version),
                           "Upgrade the NVIDIA driver, or install a PyTorch wheel built for an older CUDA "
                           "(https://pytorch.org/get-started/previous-versions/)."));
    } else {
        out.push_back(
            item("cuda_driver", CheckStatus::pass, "CUDA driver version",
                 "supports CUDA up to " + *s.gpu_cuda_driver_version +
                     (f.torch.cuda_version ? " (PyTorch needs " + *f.torch.cuda_version + ")" : std::string())));
    }
}

// "python3 (/root/.pyenv/versions/3.11.7/bin/python3, Python 3.11.7)": which interpreter was asked,
// in the title and in the detail (the text view prints the detail).
std::string interpreter(const TorchFacts& t) {
    std::string who = t.python, more;
    if (!t.executable.empty() && t.executable != t.python) more = t.executable;
    if (t.python_version) more += (more.empty() ? "" : ", ") + std::string("Python ") + *t.python_version;
    return more.empty() ? who : who + " (" + more + ")";
}

std::string torch_title(const TorchFacts& t) {
    return "PyTorch (" + interpreter(t) + ")";
}

void torch_checks(const DoctorFacts& f, std::vector<CheckItem>& out) {
    const TorchFacts& t = f.torch;
    const bool have_gpus = !f.snapshot.gpus.empty();
    if (!t.torch_version) {
        const std::string why = !t.probed ? "not checked" : t.error.empty() ? "no answer" : t.error;
        const bool timed_out = why.find("did not answer") != std::string::npos;
        // The interpreter the user named must answer; the default python3 may be absent (a skip), but
        // one that runs without torch is worth a warning with where torch is.
        const bool ran_without_torch = why.find("cannot import torch") != std::string::npos;
        const CheckStatus status = t.asked && t.probed && !timed_out ? CheckStatus::fail
                                   : timed_out || ran_without_torch  ? CheckStatus::warn
                                                                     : CheckStatus::skip;
        out.push_back(item("pytorch", status, torch_title(t), t.probed ? interpreter(t) + ": " + why : why,
                           timed_out ? "Importing torch hangs: check the Python environment and any GPU the import "
                                       "touches."
                           : !t.elsewhere.empty() ? t.elsewhere + "."
                           : status == CheckStatus::fail
                               ? "Name a Python that has PyTorch installed (--python), e.g. your venv's bin/python."
                               : ""));
        for (const char* id : {"pytorch_cuda", "cudnn", "nccl"})
            out.push_back(item(id, CheckStatus::skip, id, "no PyTorch found"));
        return;
    }
    const std::string version = *t.torch_version;
    if (version_less(version, "1.6"))
        out.push_back(
            item("pytorch", CheckStatus::fail, torch_title(t), interpreter(t) + ": torch " + version,
                 "PyTorch 1.6 or newer is needed (native mixed precision, DDP fixes): pip install -U torch."));
    else
        out.push_back(item("pytorch", CheckStatus::pass, torch_title(t), "torch " + version + " in " + interpreter(t)));
    if (!t.cuda_version)
        out.push_back(item("pytorch_cuda", have_gpus ? CheckStatus::fail : CheckStatus::warn, "PyTorch with CUDA",
                           "this torch is a CPU-only build",
                           "Install a CUDA build of PyTorch (the pip index for your CUDA version, e.g. "
                           "https://download.pytorch.org/whl/cu124)."));
    else if (have_gpus && !t.cuda_available)
        out.push_back(item("pytorch_cuda", CheckStatus::fail, "PyTorch with CUDA",
                           "built for CUDA " + *t.cuda_version + " but torch.cuda.is_available() is False",
                           "Usually a driver older than the build, or CUDA_VISIBLE_DEVICES hiding every GPU."));
    else
        out.push_back(item("pytorch_cuda", CheckStatus::pass, "PyTorch with CUDA",
                           fmt::format("CUDA {}, {} device(s) visible", *t.cuda_version, t.device_count)));
    if (!t.cudnn_version)
        out.push_back(item("cudnn", t.cuda_version ? CheckStatus::warn : CheckStatus::skip, "cuDNN", "not available"));
    else if (version_less(*t.cudnn_version, "8"))
        out.push_back(item("cudnn", CheckStatus::fail, "cuDNN", *t.cudnn_version,
                           "cuDNN 8 or newer is needed: install a current PyTorch build, which bundles it."));
    else
        out.push_back(item("cudnn", CheckStatus::pass, "cuDNN", *t.cudnn_version));
    if (t.nccl_version)
        out.push_back(item("nccl", CheckStatus::pass, "NCCL", *t.nccl_version));
    else
        out.push_back(item("nccl", f.snapshot.gpus.size() > 1 ? CheckStatus::warn : CheckStatus::skip, "NCCL",
                           "not available to PyTorch", "Multi-GPU training (DDP) needs a PyTorch build with NCCL."));
}

// CUDA_VISIBLE_DEVICES entries: indices, or GPU/MIG UUIDs (or a unique prefix of one).
void visibility_checks(const DoctorFacts& f, std::vector<CheckItem>& out) {
    const std::vector<GpuInfo>& gpus = f.snapshot.gpus;
    if (!has_env(f, "CUDA_VISIBLE_DEVICES")) {
        out.push_back(
            item("cuda_visible_devices", CheckStatus::pass, "CUDA_VISIBLE_DEVICES", "not set: every GPU is visible"));
    } else {
        const std::string value = env(f, "CUDA_VISIBLE_DEVICES");
        std::string bad;
        for (const std::string& raw : split(value, ',')) {
            std::string e = raw;
            e.erase(0, e.find_first_not_of(' '));
            e.erase(e.find_last_not_of(' ') + 1);
            bool found = false;
            if (!e.empty() && std::all_of(e.begin(), e.end(), [](char c) { return c >= '0' && c <= '9'; })) {
                const std::optional<std::size_t> n = text::parse_digits<std::size_t>(e);
                found = n && *n < gpus.size();
            } else if (!e.empty()) {
                for (const GpuInfo& g : gpus) found |= g.uuid.rfind(e, 0) == 0;
            }
            if (!found) bad += (bad.empty() ? "" : ", ") + (e.empty() ? std::string("(empty)") : e);
        }
        if (value.empty())
            out.push_back(item("cuda_visible_devices", CheckStatus::warn, "CUDA_VISIBLE_DEVICES",
                               "set but empty: CUDA sees no GPU",
                               "Unset it, or name the GPUs: CUDA_VISIBLE_DEVICES=0,1"));
        else if (!bad.empty())
            out.push_back(
                item("cuda_visible_devices", CheckStatus::fail, "CUDA_VISIBLE_DEVICES",
                     fmt::format("\"{}\": no GPU {} on this machine ({} GPUs)", value, bad, gpus.size()),
                     "Name existing GPUs by index (0 to N-1) or UUID (nvidia-smi -L); CUDA stops at the first "
                     "entry it cannot find."));
        else
            out.push_back(item("cuda_visible_devices", CheckStatus::pass, "CUDA_VISIBLE_DEVICES",
                               "\"" + value + "\": every entry names a GPU"));
    }
    if (gpus.size() < 2)
        out.push_back(item("cuda_device_order", CheckStatus::pass, "CUDA_DEVICE_ORDER",
                           "one GPU or none: the order cannot differ"));
    else if (env(f, "CUDA_DEVICE_ORDER") == "PCI_BUS_ID")
        out.push_back(item("cuda_device_order", CheckStatus::pass, "CUDA_DEVICE_ORDER",
                           "PCI_BUS_ID: CUDA numbers GPUs as nvidia-smi and baton do"));
    else
        out.push_back(item("cuda_device_order", CheckStatus::warn, "CUDA_DEVICE_ORDER",
                           has_env(f, "CUDA_DEVICE_ORDER") ? "\"" + env(f, "CUDA_DEVICE_ORDER") + "\""
                                                           : "not set (CUDA's default is FASTEST_FIRST)",
                           "export CUDA_DEVICE_ORDER=PCI_BUS_ID, so that cuda:N is GPU N of nvidia-smi and baton."));
}

void gpu_state_checks(const DoctorFacts& f, std::vector<CheckItem>& out) {
    const std::vector<GpuInfo>& gpus = f.snapshot.gpus;
    if (gpus.empty()) {
        for (const char* id : {"persistence_mode", "ecc", "pcie_link", "compute_mode"})
            out.push_back(item(id, CheckStatus::skip, id, "no GPU"));
        return;
    }
    std::string off, errors, narrow, prohibited, exclusive;
    for (const GpuInfo& g : gpus) {
        const std::string name = "GPU" + std::to_string(g.index);
        if (g.persistence_mode && !*g.persistence_mode) off += (off.empty() ? "" : ", ") + name;
        if (g.ecc_uncorrected_volatile && *g.ecc_uncorrected_volatile > 0)
            errors += (errors.empty() ? "" : ", ") + fmt::format("{} ({})", name, *g.ecc_uncorrected_volatile);
        if (g.pcie_width && g.pcie_width_max && *g.pcie_width < *g.pcie_width_max)
            narrow +=
                (narrow.empty() ? "" : ", ") + fmt::format("{} x{} of x{}", name, *g.pcie_width, *g.pcie_width_max);
        if (g.compute_mode == ComputeMode::prohibited) prohibited += (prohibited.empty() ? "" : ", ") + name;
        if (g.compute_mode == ComputeMode::exclusive_process) exclusive += (exclusive.empty() ? "" : ", ") + name;
    }
    out.push_back(off.empty()
                      ? item("persistence_mode", CheckStatus::pass, "Persistence mode", "on (or not reported)")
                      : item("persistence_mode", CheckStatus::warn, "Persistence mode", "off on " + off,
                             "sudo nvidia-smi -pm 1 (or enable nvidia-persistenced): without it the driver tears "
                             "down between jobs and every start pays seconds of initialisation."));
    out.push_back(
        errors.empty()
            ? item("ecc", CheckStatus::pass, "ECC errors", "no uncorrectable errors")
            : item("ecc", CheckStatus::fail, "ECC errors", "uncorrectable errors on " + errors,
                   "Drain the GPU, reset it (nvidia-smi -r), run dcgmi diag -r 3; replace it if they return."));
    out.push_back(narrow.empty()
                      ? item("pcie_link", CheckStatus::pass, "PCIe link width", "every GPU at its full width")
                      : item("pcie_link", CheckStatus::warn, "PCIe link width", narrow,
                             "Reseat the card or use a full x16 slot; check risers."));
    if (!prohibited.empty())
        out.push_back(item("compute_mode", CheckStatus::fail, "Compute mode", "prohibited on " + prohibited,
                           "sudo nvidia-smi -c DEFAULT: no process can use a prohibited GPU."));
    else if (!exclusive.empty())
        out.push_back(item("compute_mode", CheckStatus::warn, "Compute mode", "exclusive_process on " + exclusive,
                           "Only one process can use such a GPU: fine for one trainer per GPU, fatal for tools that "
                           "open a second context. sudo nvidia-smi -c DEFAULT to share."));
    else
        out.push_back(item("compute_mode", CheckStatus::pass, "Compute mode", "default"));
}

void host_checks(const DoctorFacts& f, std::vector<CheckItem>& out) {
    const MemoryStats& m = f.snapshot.memory;
    if (!m.shm_total_bytes)
        out.push_back(item("shm_size", CheckStatus::warn, "/dev/shm", "not found",
                           "DataLoader workers pass batches through /dev/shm: mount it (tmpfs)."));
    else if (*m.shm_total_bytes < (1ULL << 30))
        out.push_back(item("shm_size", CheckStatus::warn, "/dev/shm", gib(static_cast<double>(*m.shm_total_bytes)),
                           "Too small for DataLoader workers (Docker's default is 64 MB): docker run --ipc=host or "
                           "--shm-size=16g."));
    else
        out.push_back(item("shm_size", CheckStatus::pass, "/dev/shm", gib(static_cast<double>(*m.shm_total_bytes))));
    if (!f.limits.memlock_bytes)
        out.push_back(item("memlock", CheckStatus::pass, "Locked memory (ulimit -l)", "unlimited"));
    else
        out.push_back(item("memlock", CheckStatus::warn, "Locked memory (ulimit -l)",
                           fmt::format("{} KiB", *f.limits.memlock_bytes / 1024),
                           "NCCL over InfiniBand/RoCE registers (locks) its buffers: ulimit -l unlimited, or "
                           "docker run --ulimit memlock=-1 (/etc/security/limits.conf for logins)."));
    if (f.limits.nofile && *f.limits.nofile < 65536)
        out.push_back(item("open_files", CheckStatus::warn, "Open files (ulimit -n)", std::to_string(*f.limits.nofile),
                           "DataLoader workers sharing tensors through file descriptors run out: ulimit -n 65536 (or "
                           "torch.multiprocessing.set_sharing_strategy(\"file_system\"))."));
    else
        out.push_back(item("open_files", CheckStatus::pass, "Open files (ulimit -n)",
                           f.limits.nofile ? std::to_string(*f.limits.nofile) : std::string("unlimited")));
    if (f.snapshot.swap.total_bytes == 0)
        out.push_back(item("swap", CheckStatus::warn, "Swap", "none",
                           "Without swap, a memory spike goes straight to the OOM killer; a few GiB of swap turn it "
                           "into a visible slowdown (baton's swap_active) instead."));
    else
        out.push_back(item("swap", CheckStatus::pass, "Swap", gib(static_cast<double>(f.snapshot.swap.total_bytes))));
}

void env_checks(const DoctorFacts& f, std::vector<CheckItem>& out) {
    std::vector<std::string> issues;
    if (env(f, "NCCL_P2P_DISABLE") == "1")
        issues.push_back("NCCL_P2P_DISABLE=1 (no GPU peer-to-peer: slower all-reduce)");
    if (env(f, "NCCL_IB_DISABLE") == "1")
        issues.push_back("NCCL_IB_DISABLE=1 (InfiniBand off: multi-node runs use TCP)");
    if (env(f, "NCCL_DEBUG") == "TRACE") issues.push_back("NCCL_DEBUG=TRACE (logs every call: slow)");
    if (has_env(f, "NCCL_SOCKET_IFNAME")) {
        std::vector<std::string> names;
        for (const NetworkStats& n : f.snapshot.networks) names.push_back(n.name);
        if (nccl_socket_interfaces(env(f, "NCCL_SOCKET_IFNAME"), names).empty())
            issues.push_back("NCCL_SOCKET_IFNAME=" + env(f, "NCCL_SOCKET_IFNAME") +
                             " names no interface of this machine");
    }
    if (issues.empty()) {
        out.push_back(item("nccl_env", CheckStatus::pass, "NCCL variables", "none that hurt"));
    } else {
        std::string d;
        for (const std::string& i : issues) d += (d.empty() ? "" : "; ") + i;
        out.push_back(item("nccl_env", CheckStatus::warn, "NCCL variables", d,
                           "Unset debugging switches for production runs; name existing interfaces (ip link)."));
    }
    std::string harmful;
    for (const char* name : {"NSIGHT_CUDA_DEBUGGER", "CUDA_INJECTION32_PATH", "CUDA_INJECTION64_PATH",
                             "CUDA_AUTO_BOOST", "CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "CUDA_COREDUMP_FILE",
                             "CUDA_DEVICE_WAITS_ON_EXCEPTION", "CUDA_PROFILE", "COMPUTE_PROFILE", "OPENCL_PROFILE"})
        if (has_env(f, name)) harmful += (harmful.empty() ? "" : ", ") + std::string(name);
    if (env(f, "CUDA_LAUNCH_BLOCKING") == "1")
        harmful +=
            (harmful.empty() ? "" : ", ") + std::string("CUDA_LAUNCH_BLOCKING=1 (every kernel runs synchronously)");
    out.push_back(harmful.empty() ? item("harmful_env", CheckStatus::pass, "CUDA debugging variables", "none set")
                                  : item("harmful_env", CheckStatus::warn, "CUDA debugging variables", harmful,
                                         "These attach profilers or debuggers to every kernel (DCGM's diagnostics flag "
                                         "them): unset them outside debugging sessions."));
}

void orphan_check(const DoctorFacts& f, std::vector<CheckItem>& out) {
    std::string orphans;
    for (const GpuInfo& g : f.snapshot.gpus)
        for (const GpuProcess& gp : g.processes) {
            const ProcessInfo* it = find_process(f.snapshot, gp.our_pid());
            if (!it) continue;
            // Parent died: reparented to init. (A worker under a subreaper is not caught here.)
            if (it->ppid == 1 && gp.used_memory_bytes.value_or(0) > 0)
                orphans += (orphans.empty() ? "" : ", ") +
                           fmt::format("pid {} ({}, {}) holds {} on GPU{}", gp.our_pid(), it->name, it->user,
                                       gib(static_cast<double>(*gp.used_memory_bytes)), g.index);
        }
    out.push_back(
        orphans.empty()
            ? item("orphaned_gpu_processes", CheckStatus::pass, "Orphaned GPU processes", "none")
            : item("orphaned_gpu_processes", CheckStatus::warn, "Orphaned GPU processes", orphans,
                   "Their parent died (a crashed launcher leaves DataLoader or DDP workers behind): end them if "
                   "they are not a daemon you started on purpose."));
}

// Whether the queue's jobs get limits the kernel enforces (a cgroup each) or CPU affinity only.
void job_cgroup_check(const DoctorFacts& f, std::vector<CheckItem>& out) {
    const QueueFacts& q = f.queue;
    const std::string title = "Job queue: cgroups per job";
    if (q.job_cgroups) {
        out.push_back(
            item("job_cgroups", CheckStatus::pass, title, "the agent on " + q.socket + " gives " + q.cgroups));
        return;
    }
    const std::string fix =
        "Run the queue's agent as the system service deploy/baton-queue.service (Delegate=yes hands it a cgroup "
        "v2 subtree): each job then gets memory.max from --mem and cpuset.cpus from its CPUs.";
    if (q.agent) {
        out.push_back(
            item("job_cgroups", CheckStatus::warn, title, "the agent on " + q.socket + " gives " + q.cgroups, fix));
        return;
    }
    out.push_back(item("job_cgroups", CheckStatus::skip, title,
                       "no queue agent answers; one started now would give " + q.cgroups, fix));
}

// The GPUs the queue may give ([queue] gpus, prefer; inside a Slurm allocation, its GPUs), as the agent
// says: an admin sees the pool took the config as meant.
void queue_gpus_check(const QueueFacts& q, std::vector<CheckItem>& out) {
    const std::string title = "Job queue: its GPUs";
    if (!q.agent || !q.gpus) {
        out.push_back(item("queue_gpus", CheckStatus::skip, title,
                           q.agent ? "the agent is older than this baton (restart it)" : "no queue agent answers"));
        return;
    }
    if (!q.gpus_problem.empty()) {
        out.push_back(item("queue_gpus", CheckStatus::warn, title, "the agent cannot read the GPUs: " + q.gpus_problem,
                           "GPU jobs wait until it can; see the nvidia_driver check."));
        return;
    }
    out.push_back(item("queue_gpus", CheckStatus::pass, title,
                       q.gpus_count == 0
                           ? std::string("none: CPU jobs only (no GPU here, or [queue] gpus names none of them)")
                           : fmt::format("GPU {} (in the order given; [queue] gpus and prefer), {} of {} free now",
                                         *q.gpus, q.gpus_free, q.gpus_count)));
}

// What baton's own config files change: a setting someone made long ago explains a surprise
// today (a moved history database, a raised threshold). Never a warning: any setting is allowed.
void config_check(const ConfigFacts& c, std::vector<CheckItem>& out) {
    const std::string title = "baton's configuration";
    const std::string files =
        c.files.empty() ? "no config file" : "read " + fmt::format("{}", fmt::join(c.files, ", "));
    if (c.changed.empty()) {
        out.push_back(item("config", CheckStatus::pass, title, files + "; every key at its default"));
        return;
    }
    out.push_back(item("config", CheckStatus::pass, title,
                       files + "; " + std::to_string(c.changed.size()) + (c.changed.size() == 1 ? " key" : " keys") +
                           " set: " + fmt::format("{}", fmt::join(c.changed, "; "))));
}

}  // namespace

std::vector<CheckItem> run_checks(const DoctorFacts& f) {
    std::vector<CheckItem> out;
    driver_checks(f, out);
    torch_checks(f, out);
    visibility_checks(f, out);
    gpu_state_checks(f, out);
    host_checks(f, out);
    env_checks(f, out);
    orphan_check(f, out);
    job_cgroup_check(f, out);
    queue_gpus_check(f.queue, out);
    config_check(f.config, out);
    return out;
}

std::vector<std::string> nccl_socket_interfaces(const std::string& value, const std::vector<std::string>& names) {
    std::string v = value;
    const bool exclude = !v.empty() && v[0] == '^';
    if (exclude) v.erase(0, 1);
    const bool exact = !v.empty() && v[0] == '=';
    if (exact) v.erase(0, 1);
    const std::vector<std::string> wanted = split(v, ',');
    std::vector<std::string> out;
    for (const std::string& name : names) {
        bool named = false;
        for (const std::string& w : wanted) named |= !w.empty() && (exact ? name == w : name.rfind(w, 0) == 0);
        if (named != exclude) out.push_back(name);
    }
    return out;
}

}  // namespace baton::doctor
