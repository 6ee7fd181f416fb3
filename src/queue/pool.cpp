#include "queue/pool.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "core/text_parse.hpp"
#include "sample/process_lookup.hpp"

namespace baton::queue {

namespace {

std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> out;
    std::string part;
    std::istringstream in(s);
    while (std::getline(in, part, ','))
        if (!part.empty()) out.push_back(part);
    return out;
}

// sysfs names a PCI device "0000:3b:00.0"; NVML "00000000:3B:00.0" (a domain of 8 digits).
std::string sysfs_pci_name(std::string bus_id) {
    const std::size_t colon = bus_id.find(':');
    if (colon != std::string::npos && colon > 4) bus_id.erase(0, colon - 4);
    for (char& c : bus_id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return bus_id;
}

std::vector<unsigned> local_cpus(const std::string& sys_root, const std::string& pci_bus_id) {
    if (pci_bus_id.empty() || pci_bus_id.find('/') != std::string::npos) return {};
    std::ifstream in(sys_root + "/bus/pci/devices/" + sysfs_pci_name(pci_bus_id) + "/local_cpulist");
    std::string line;
    if (!in || !std::getline(in, line)) return {};
    return parse_cpu_list(line);
}

// Whether `id` (an index or a UUID, or a UUID's unique prefix as CUDA takes it) names GPU g.
bool names(const std::string& id, const GpuInfo& g) {
    if (!id.empty() && std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return id.size() <= 4 && text::parse_digits<unsigned>(id) == g.index;
    return !g.uuid.empty() && id.size() >= 8 && g.uuid.compare(0, id.size(), id) == 0;
}

}  // namespace

std::optional<std::vector<std::string>> allocation_gpus(const std::map<std::string, std::string>& env) {
    if (!env.count("SLURM_JOB_ID")) return std::nullopt;
    for (const char* key : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"}) {
        auto it = env.find(key);
        if (it == env.end()) continue;
        // "NoDevFiles" and "-1" are how an allocation without GPUs is told.
        if (it->second == "NoDevFiles" || it->second == "-1") return std::vector<std::string>{};
        return split_commas(it->second);
    }
    return std::vector<std::string>{};
}

Pool make_pool(const Snapshot& s, const std::set<std::uint32_t>& queue_pids, const PoolOptions& o) {
    Pool p;
    p.cpus = o.cpus;
    p.memory_bytes = o.memory_bytes;
    p.free_memory_percent = o.free_memory_percent;
    p.share_margin_percent = o.share_margin_percent;
    if (s.gpu_state != GpuState::ok) {
        p.gpus_known = false;
        p.gpus_problem = s.gpu_status;
        // No driver library, or GPU sampling off: no GPU will appear while this agent runs.
        if (s.gpu_state == GpuState::no_driver || s.gpu_state == GpuState::disabled) p.no_gpus = s.gpu_status;
    }
    for (const GpuInfo& g : s.gpus) {
        const auto named_by = [&g](const std::vector<std::string>& ids) {
            return std::any_of(ids.begin(), ids.end(), [&](const std::string& id) { return names(id, g); });
        };
        if (o.allowed_gpus && !named_by(*o.allowed_gpus)) continue;
        if (!o.configured_gpus.empty() && !named_by(o.configured_gpus)) continue;
        if (g.lost) continue;  // fell off the bus: no job goes there
        if (g.stale || g.error) {
            // NVML stopped answering about it: what runs there is not known.
            p.gpus_known = false;
            if (p.gpus_problem.empty())
                p.gpus_problem = g.error ? "GPU" + std::to_string(g.index) + ": " + *g.error
                                         : "GPU" + std::to_string(g.index) + "'s readings are stale";
        }
        PoolGpu pg;
        pg.uuid = g.uuid.empty() ? "index:" + std::to_string(g.index) : g.uuid;
        pg.index = g.index;
        const auto preferred =
            std::find_if(o.prefer.begin(), o.prefer.end(), [&](const std::string& id) { return names(id, g); });
        pg.preference = static_cast<unsigned>(preferred - o.prefer.begin());  // (prefer.size(): not named)
        pg.memory_total_bytes = g.memory_total_bytes.value_or(0);
        // Unknown use counts as full: a GPU is never handed out on a guess.
        pg.memory_used_bytes = g.memory_used_bytes.value_or(pg.memory_total_bytes);
        for (const GpuProcess& gp : g.processes) {
            if (gp.type != GpuProcessType::compute || queue_pids.count(gp.our_pid())) continue;
            ForeignProcess f;
            f.pid = gp.pid;
            if (const ProcessInfo* q = find_process(s, gp.our_pid())) f.user = q->user;
            pg.foreign.push_back(std::move(f));
        }
        for (unsigned c : local_cpus(o.sys_root, g.pci_bus_id))
            if (std::find(o.cpus.begin(), o.cpus.end(), c) != o.cpus.end()) pg.local_cpus.push_back(c);
        p.gpus.push_back(std::move(pg));
    }
    return p;
}

}  // namespace baton::queue
