// What `baton launch` and `baton clean` read from outside: Slurm's host lists and variables (anyone
// can set them), /proc/PID/stat lines (a process names itself), BATON_OWNER values (anyone's to set).
// A host list expands to at most the cap, with no empty name and no bracket left; a placement is
// consistent (node rank within the nodes, a master address that is one of the hosts, a port in
// range); parsed stat fields and owner tokens are in range.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "clean/process_facts.hpp"
#include "launch/slurm_env.hpp"
#include "store/run_owner.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace baton;
    const std::string text(reinterpret_cast<const char*>(data), size);
    constexpr std::size_t kCap = 4096;
    Result<std::vector<std::string>> hosts = baton::launch::expand_hostlist(text, kCap);
    if (hosts.ok()) {
        if (hosts->size() > kCap) std::abort();
        for (const std::string& h : *hosts)
            if (h.empty() || h.find_first_of("[],") != std::string::npos) std::abort();
    }
    // The same text as SLURM_JOB_NODELIST, and split on newlines into the other variables.
    std::map<std::string, std::string> env = {{"SLURM_JOB_ID", "77"}, {"SLURM_JOB_NODELIST", text}};
    const char* names[] = {"SLURM_JOB_NUM_NODES", "SLURM_NODEID", "SLURM_NTASKS", "SLURM_JOB_ID"};
    std::size_t at = 0;
    for (const char* name : names) {
        const std::size_t nl = text.find('\n', at);
        if (nl == std::string::npos) break;
        env[name] = text.substr(at, nl - at);
        env["SLURM_JOB_NODELIST"] = text.substr(nl + 1);
        at = nl + 1;
    }
    Result<std::optional<baton::launch::SlurmPlacement>> p = baton::launch::slurm_placement([&](const std::string& k) {
        auto it = env.find(k);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    });
    if (p.ok() && p->has_value()) {
        const baton::launch::SlurmPlacement& s = **p;
        if (s.nnodes < 1 || s.node_rank < 0 || s.node_rank >= s.nnodes || s.master_addr.empty()) std::abort();
        if (s.master_port < 20000 || s.master_port >= 40000) std::abort();
    }
    if (const std::optional<baton::clean::StatIds> ids = baton::clean::parse_stat_ids(text)) (void)ids->start_ticks;
    if (const std::optional<baton::store::RunOwner> o = baton::store::parse_owner_token(text)) {
        if (o->pid <= 0) std::abort();
        if (owner_token(*o).empty()) std::abort();
    }
    return 0;
}
