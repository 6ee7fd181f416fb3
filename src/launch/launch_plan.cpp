#include "launch/launch_plan.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <netdb.h>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sched.h>
#include <unistd.h>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/allowed_cpus.hpp"
#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/printable.hpp"
#include "core/text_parse.hpp"
#include "launch/preflight.hpp"
#include "launch/route.hpp"
#include "launch/slurm_env.hpp"

namespace baton::launch {

namespace {

Error usage(std::string message) {
    return make_error(ErrorCode::invalid_argument, "launch: " + std::move(message));
}

Error failure(std::string message) {
    return make_error("launch: " + std::move(message));
}

std::optional<int> whole_number(const std::string& s, int max) {
    const std::optional<int> v = text::parse_digits<int>(s);
    return v && *v <= max ? v : std::nullopt;
}

// Flags first, else Slurm's placement when the job runs inside an allocation, else one node.
Result<LaunchTopology> topology(const LaunchRequest& r, const std::optional<SlurmPlacement>& slurm, bool slurm_fills) {
    LaunchTopology t;
    if (slurm_fills) {
        t.nnodes = slurm->nnodes;
        t.node_rank = slurm->node_rank;
        t.master_addr = slurm->master_addr;
        t.master_port = slurm->master_port;
    } else {
        t.nnodes = r.nnodes == 0 ? 1 : r.nnodes;
        t.node_rank = r.node_rank < 0 ? 0 : r.node_rank;
        if (!r.master_addr.empty()) t.master_addr = r.master_addr;
    }
    if (t.nnodes < 1) return usage("--nnodes must be 1 or more");
    if (t.node_rank < 0 || t.node_rank >= t.nnodes)
        return usage(fmt::format("--node-rank {} is not a node of {} (0 to {})", t.node_rank, t.nnodes, t.nnodes - 1));
    if (t.nnodes > 1 && r.master_addr.empty() && !slurm_fills)
        return usage("several nodes need --master-addr (the address of node 0)");
    t.max_restarts = r.max_restarts;
    return t;
}

Result<std::set<int>> rank_filter(const std::string& text) {
    std::set<int> ranks;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t comma = text.find(',', start);
        if (comma == std::string::npos) comma = text.size();
        const std::optional<int> r = whole_number(text.substr(start, comma - start), 1 << 20);
        if (!r) return usage("--local-ranks-filter takes local ranks such as 0 or 0,3");
        ranks.insert(*r);
        start = comma + 1;
    }
    return ranks;
}

// The command every rank runs: the program itself, or the Python with -u (unbuffered, so the
// ranks' lines reach the console as they are printed) and the script or -m MODULE.
Result<std::vector<std::string>> rank_command(const LaunchRequest& r, const LaunchProbes& probes) {
    const std::string& first = r.words[0];
    if (r.no_python) {
        if (!probes.runnable(first))
            return make_error(ErrorCode::not_found,
                              "launch: cannot run " + escaped_line(first) + ": not found or not executable");
        return r.words;
    }
    if (!probes.runnable(r.python))
        return make_error(ErrorCode::not_found,
                          "launch: cannot run " + escaped_line(r.python) + ": not found (name a Python with --python)");
    std::vector<std::string> argv{r.python, "-u"};
    if (r.module) {
        argv.push_back("-m");
    } else if (Status open = probes.readable(first); !open.ok()) {
        return make_error(ErrorCode::not_found,
                          "launch: cannot open the script " + escaped_line(first) + ": " + open.error().message);
    }
    argv.insert(argv.end(), r.words.begin(), r.words.end());
    return argv;
}

Result<int> ranks_on_this_node(const LaunchRequest& r, const LaunchMachine& m) {
    if (r.nproc_per_node == "gpu" || r.nproc_per_node == "auto") {
        if (!m.gpus.empty()) return static_cast<int>(m.gpus.size());
        if (r.nproc_per_node == "auto") return static_cast<int>(m.usable_cpus);
        return failure("--nproc-per-node gpu, but no GPU is visible" + std::string(r.no_gpus ? " (--no-gpus)"
                                                                                   : m.gpu_status.empty()
                                                                                       ? ""
                                                                                       : " (" + m.gpu_status + ")"));
    }
    const std::optional<int> n = whole_number(r.nproc_per_node, 1024);
    if (!n || *n < 1)
        return usage("--nproc-per-node takes a number from 1 to 1024, 'gpu' or 'auto', not '" + r.nproc_per_node + "'");
    return *n;
}

// Rank 0's store port: free on this node when the store is to listen here; inside Slurm the one
// derived from the job id (the same on every node); 29500, torchrun's, across nodes.
Result<int> master_port(const LaunchRequest& r, const LaunchTopology& t, bool slurm_fills, const LaunchProbes& probes) {
    if (!r.master_port.empty() && r.master_port != "auto") {
        const std::optional<int> port = whole_number(r.master_port, 65535);
        if (!port || *port < 1) return usage("--master-port takes 1 to 65535 or 'auto'");
        return *port;
    }
    if (slurm_fills) return t.master_port;
    if (t.nnodes == 1) {
        Result<int> port = probes.free_port();
        if (!port.ok()) return failure(port.error().message);
        return *port;
    }
    if (r.master_port == "auto")
        return usage("--master-port auto needs one node (or Slurm): name the port every node uses");
    return 29500;
}

}  // namespace

// --nccl's words, checked with the other flags (before the machine or the script is read).
Result<std::set<std::string>> nccl_words(const LaunchRequest& r) {
    std::set<std::string> asked;
    for (const std::string& words : r.nccl) {
        std::size_t start = 0;
        while (start <= words.size()) {
            std::size_t comma = words.find(',', start);
            if (comma == std::string::npos) comma = words.size();
            const std::string w = words.substr(start, comma - start);
            if (w != "socket" && w != "ib" && w != "debug")
                return usage("--nccl takes socket, ib or debug (comma-separated), not '" + printable(w) + "'");
            asked.insert(w);
            start = comma + 1;
        }
    }
    if (asked.count("socket") && asked.count("ib"))
        return usage("--nccl socket and --nccl ib contradict each other (sockets only, or InfiniBand)");
    return asked;
}

// --nccl socket|ib|debug: the usual NCCL debugging switches, set for every rank unless the
// environment already has them (docs/launch.md).
void nccl_presets(const std::set<std::string>& asked, const LaunchTopology& t, const LaunchProbes& probes,
                  LaunchPlan& plan) {
    if (asked.count("debug") && !plan.extras.nccl_debug) plan.extras.nccl_debug = "INIT,COLL,NET";
    if (!asked.count("socket") && !asked.count("ib")) return;
    plan.extras.nccl_ib_disable = asked.count("socket") ? "1" : "0";
    const std::optional<std::string> iface = probes.interface_to ? probes.interface_to(t.master_addr) : std::nullopt;
    if (iface)
        plan.extras.nccl_socket_ifname = *iface;
    else
        plan.warnings.push_back("--nccl: no interface routes to the master address " + t.master_addr +
                                " here: NCCL_SOCKET_IFNAME is left to NCCL");
}

Result<LaunchPlan> plan_launch(const LaunchRequest& r, const EnvLookup& env, const LaunchProbes& probes) {
    if (r.words.empty())
        return usage("no script given (baton launch [OPTIONS] SCRIPT.py [ARGS...], -m MODULE or --no-python CMD)");
    if (r.module && r.no_python) return usage("-m and --no-python exclude each other");

    Result<std::optional<SlurmPlacement>> slurm = slurm_placement(env);
    if (!slurm.ok()) return failure(slurm.error().message);
    const bool slurm_fills = slurm->has_value() && r.nnodes == 0 && r.node_rank < 0 && r.master_addr.empty();
    Result<LaunchTopology> t = topology(r, *slurm, slurm_fills);
    if (!t.ok()) return t.error();
    LaunchPlan plan;
    plan.topology = *t;
    if (!r.run_id.empty()) {
        if (r.run_id.size() > 64 ||
            r.run_id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
                std::string::npos ||
            r.run_id[0] == '.')
            return usage("--run-id takes up to 64 letters, digits, '.', '_' or '-'");
        plan.topology.run_id = r.run_id;
    } else {
        plan.topology.run_id = slurm_fills ? "slurm-" + (*slurm)->job_id : probes.new_run_id();
    }
    if (!r.local_ranks_filter.empty()) {
        Result<std::set<int>> ranks = rank_filter(r.local_ranks_filter);
        if (!ranks.ok()) return ranks.error();
        plan.console_ranks = std::move(*ranks);
    }
    if (!r.seed.empty()) {
        if (!text::parse_digits<std::uint32_t>(r.seed))
            return usage("--seed takes a whole number from 0 to 4294967295 (PYTHONHASHSEED's range)");
        plan.extras.seed = r.seed;
    }
    const Result<std::set<std::string>> nccl = nccl_words(r);
    if (!nccl.ok()) return nccl.error();
    Result<std::vector<std::string>> argv = rank_command(r, probes);
    if (!argv.ok()) return argv.error();
    plan.argv = std::move(*argv);

    Result<LaunchMachine> machine = probes.machine();
    if (!machine.ok()) return machine.error();
    const LaunchMachine& m = *machine;
    Result<int> local = ranks_on_this_node(r, m);
    if (!local.ok()) return local.error();
    const int n = plan.topology.nproc_per_node = *local;
    plan.extras.cpus = m.usable_cpus;
    plan.extras.nccl_debug = r.nccl_debug;
    const std::string gpu_word = m.gpus.size() == 1 ? "GPU" : "GPUs";
    if (r.bind_gpus) {
        if (m.gpus.empty()) return failure("--bind-gpus, but no GPU is visible");
        if (static_cast<std::size_t>(n) > m.gpus.size())
            return failure(
                fmt::format("--bind-gpus gives each rank its own GPU, but {} ranks would share {} {}: two "
                            "ranks on one GPU (use --nproc-per-node gpu)",
                            n, m.gpus.size(), gpu_word));
        plan.extras.gpus.assign(m.gpus.begin(), m.gpus.begin() + n);
    } else if (!m.gpus.empty() && static_cast<std::size_t>(n) > m.gpus.size()) {
        plan.warnings.push_back(fmt::format("{} ranks on {} {}: ranks will share GPUs", n, m.gpus.size(), gpu_word));
    }

    nccl_presets(*nccl, plan.topology, probes, plan);

    Result<int> port = master_port(r, plan.topology, slurm_fills, probes);
    if (!port.ok()) return port.error();
    plan.topology.master_port = *port;
    if (plan.topology.node_rank == 0)
        if (Status free = probes.port_free(plan.topology.master_port); !free.ok()) return failure(free.error().message);
    return plan;
}

unsigned usable_cpus() {
    return static_cast<unsigned>(allowed_cpus().size());
}

LaunchProbes system_launch_probes() {
    LaunchProbes p;
    p.free_port = pick_free_port;
    p.port_free = check_port_free;
    p.new_run_id = [] {
        // 20261201-071203-3f9a1c: sorts by time, unique enough for a log directory.
        std::random_device rd;
        return fmt::format("{}-{:06x}", local_time_text(unix_millis(), "%Y%m%d-%H%M%S"), rd() & 0xffffff);
    };
    p.runnable = [](const std::string& program) {
        // As execvp looks it up: a name with a slash as it is, else each PATH entry (empty: ".").
        if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
        const char* path = std::getenv("PATH");
        const std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
        std::size_t start = 0;
        while (start <= dirs.size()) {
            std::size_t colon = dirs.find(':', start);
            if (colon == std::string::npos) colon = dirs.size();
            const std::string dir = colon == start ? "." : dirs.substr(start, colon - start);
            if (access((dir + "/" + program).c_str(), X_OK) == 0) return true;
            start = colon + 1;
        }
        return false;
    };
    p.readable = [](const std::string& file) -> Status {
        if (access(file.c_str(), R_OK) != 0) return make_error(std::strerror(errno));
        return Ok{};
    };
    p.interface_to = [](const std::string& host) -> std::optional<std::string> {
        addrinfo hints{};
        hints.ai_family = AF_INET;
        addrinfo* found = nullptr;
        if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || !found) return std::nullopt;
        char text[INET_ADDRSTRLEN] = "";
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
        freeaddrinfo(found);
        const std::optional<std::string> table = read_small_file("/proc/net/route", 1u << 20);
        return route_interface(table.value_or(""), text);
    };
    return p;
}

}  // namespace baton::launch
