// `baton launch`'s decisions before anything starts, on probes instead of the machine: the
// topology from flags or Slurm, ranks per node, GPU binding, the master port, run ids, the rank
// filter, the seed, the command; which refusals are usage errors (exit 2), which are 127, which 1.
#include "launch/launch_plan.hpp"

#include <gtest/gtest.h>
#include <map>

#include "test_support.hpp"

using namespace baton;
using namespace baton::launch;

namespace {

// Probes of a machine with `gpus` GPUs and 8 CPUs, where every program runs and every script opens;
// counts what the plan asked.
struct FakeMachine {
    std::vector<std::string> gpus;
    std::string gpu_status;
    int machine_reads = 0, free_port_calls = 0;
    std::vector<int> ports_checked;
    bool port_taken = false;
    std::set<std::string> missing;       // programs and scripts that are not there
    std::vector<std::string> routed_to;  // the hosts --nccl asked the route of

    LaunchProbes probes() {
        LaunchProbes p;
        p.machine = [this]() -> Result<LaunchMachine> {
            ++machine_reads;
            return LaunchMachine{gpus, gpu_status, 8};
        };
        p.free_port = [this]() -> Result<int> {
            ++free_port_calls;
            return 41234;
        };
        p.port_free = [this](int port) -> Status {
            ports_checked.push_back(port);
            if (port_taken) return make_error("port " + std::to_string(port) + " is taken on this node");
            return Ok{};
        };
        p.new_run_id = [] { return std::string("20261202-120000-abcdef"); };
        p.runnable = [this](const std::string& program) { return !missing.count(program); };
        p.readable = [this](const std::string& file) -> Status {
            if (missing.count(file)) return make_error("No such file or directory");
            return Ok{};
        };
        p.interface_to = [this](const std::string& host) -> std::optional<std::string> {
            routed_to.push_back(host);
            if (host == "10.9.9.9") return std::nullopt;
            return std::string(host == "127.0.0.1" ? "lo" : "ib0");
        };
        return p;
    }
};

LaunchRequest script(std::vector<std::string> words = {"train.py", "--lr", "3e-4"}) {
    LaunchRequest r;
    r.words = std::move(words);
    return r;
}

Result<LaunchPlan> plan(const LaunchRequest& r, FakeMachine& m, const std::map<std::string, std::string>& env = {}) {
    return plan_launch(r, test::env_lookup(env), m.probes());
}

// The message of a refusal with the code it must have.
std::string refusal(const Result<LaunchPlan>& p, ErrorCode code) {
    if (p.ok()) return "(planned)";
    EXPECT_TRUE(p.is(code)) << error_code_name(p.error().code) << ": " << p.error().message;
    return p.error().message;
}

const std::map<std::string, std::string> kSlurmNode1 = {
    {"SLURM_JOB_ID", "4711"},     {"SLURM_JOB_NODELIST", "gpu[07-08]"},
    {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_NODEID", "1"},
    {"SLURM_PROCID", "1"},        {"SLURM_NTASKS", "2"}};

}  // namespace

TEST(LaunchPlan, OneNodeByDefault) {
    FakeMachine m;
    Result<LaunchPlan> p = plan(script(), m);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->topology.nnodes, 1);
    EXPECT_EQ(p->topology.node_rank, 0);
    EXPECT_EQ(p->topology.nproc_per_node, 1);
    EXPECT_EQ(p->topology.master_addr, "127.0.0.1");
    EXPECT_EQ(p->topology.master_port, 41234) << "a free port of this node";
    EXPECT_EQ(m.ports_checked, std::vector<int>{41234});
    EXPECT_EQ(p->topology.run_id, "20261202-120000-abcdef");
    EXPECT_EQ(p->argv, (std::vector<std::string>{"python3", "-u", "train.py", "--lr", "3e-4"}));
    EXPECT_EQ(p->extras.cpus, 8u);
    EXPECT_FALSE(p->console_ranks);
    EXPECT_FALSE(p->extras.seed);
    EXPECT_TRUE(p->warnings.empty());
}

TEST(LaunchPlan, TheCommandEveryRankRuns) {
    FakeMachine m;
    LaunchRequest r = script({"pkg.train", "--x"});
    r.module = true;
    r.python = "/opt/venv/bin/python";
    EXPECT_EQ(plan(r, m)->argv, (std::vector<std::string>{"/opt/venv/bin/python", "-u", "-m", "pkg.train", "--x"}));
    LaunchRequest prog = script({"./bench", "7"});
    prog.no_python = true;
    EXPECT_EQ(plan(prog, m)->argv, (std::vector<std::string>{"./bench", "7"}));

    m.machine_reads = 0;
    m.missing = {"./bench", "python3", "gone.py"};
    EXPECT_EQ(refusal(plan(prog, m), ErrorCode::not_found), "launch: cannot run ./bench: not found or not executable");
    EXPECT_EQ(refusal(plan(script(), m), ErrorCode::not_found),
              "launch: cannot run python3: not found (name a Python with --python)");
    m.missing = {"gone.py"};
    EXPECT_EQ(refusal(plan(script({"gone.py"}), m), ErrorCode::not_found),
              "launch: cannot open the script gone.py: No such file or directory");
    EXPECT_EQ(m.machine_reads, 0) << "a command that cannot run is said before the machine is read";
}

TEST(LaunchPlan, FlagErrorsAreUsageErrorsSaidBeforeTheMachineIsRead) {
    FakeMachine m;
    EXPECT_EQ(refusal(plan(script({}), m), ErrorCode::invalid_argument),
              "launch: no script given (baton launch [OPTIONS] SCRIPT.py [ARGS...], -m MODULE or --no-python CMD)");
    LaunchRequest both = script();
    both.module = both.no_python = true;
    EXPECT_EQ(refusal(plan(both, m), ErrorCode::invalid_argument), "launch: -m and --no-python exclude each other");
    LaunchRequest rank = script();
    rank.nnodes = 2;
    rank.node_rank = 2;
    rank.master_addr = "10.0.0.1";
    EXPECT_EQ(refusal(plan(rank, m), ErrorCode::invalid_argument), "launch: --node-rank 2 is not a node of 2 (0 to 1)");
    LaunchRequest no_addr = script();
    no_addr.nnodes = 2;
    EXPECT_EQ(refusal(plan(no_addr, m), ErrorCode::invalid_argument),
              "launch: several nodes need --master-addr (the address of node 0)");
    LaunchRequest negative = script();
    negative.nnodes = -3;
    EXPECT_EQ(refusal(plan(negative, m), ErrorCode::invalid_argument), "launch: --nnodes must be 1 or more");
    for (const std::string& bad : std::vector<std::string>{"x/y", ".hidden", std::string(65, 'a'), "a b"}) {
        LaunchRequest id = script();
        id.run_id = bad;
        EXPECT_EQ(refusal(plan(id, m), ErrorCode::invalid_argument),
                  "launch: --run-id takes up to 64 letters, digits, '.', '_' or '-'")
            << bad;
    }
    for (const std::string bad : {"a", "0,,1", "-1", "1,", "99999999999"}) {
        LaunchRequest f = script();
        f.local_ranks_filter = bad;
        EXPECT_EQ(refusal(plan(f, m), ErrorCode::invalid_argument),
                  "launch: --local-ranks-filter takes local ranks such as 0 or 0,3")
            << bad;
    }
    for (const std::string bad : {"4294967296", "-1", "1e3", "99999999999"}) {
        LaunchRequest s = script();
        s.seed = bad;
        EXPECT_EQ(refusal(plan(s, m), ErrorCode::invalid_argument),
                  "launch: --seed takes a whole number from 0 to 4294967295 (PYTHONHASHSEED's range)")
            << bad;
    }
    EXPECT_EQ(m.machine_reads, 0);
}

TEST(LaunchPlan, RunIdFilterAndSeedAsGiven) {
    FakeMachine m;
    LaunchRequest r = script();
    r.run_id = "exp-3.1_b";
    r.local_ranks_filter = "3,0,3";
    r.seed = "4294967295";
    r.nccl_debug = "INIT,NET";
    Result<LaunchPlan> p = plan(r, m);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->topology.run_id, "exp-3.1_b");
    EXPECT_EQ(p->console_ranks, (std::set<int>{0, 3}));
    EXPECT_EQ(p->extras.seed, "4294967295");
    EXPECT_EQ(p->extras.nccl_debug, "INIT,NET");
}

TEST(LaunchPlan, RanksPerNodeFromTheGpusOrTheCpus) {
    FakeMachine m;
    m.gpus = {"GPU-a", "GPU-b"};
    LaunchRequest r = script();
    r.nproc_per_node = "gpu";
    EXPECT_EQ(plan(r, m)->topology.nproc_per_node, 2);
    r.nproc_per_node = "auto";
    EXPECT_EQ(plan(r, m)->topology.nproc_per_node, 2);
    m.gpus.clear();
    EXPECT_EQ(plan(r, m)->topology.nproc_per_node, 8) << "auto without GPUs: one rank per usable CPU";
    r.nproc_per_node = "gpu";
    m.gpu_status = "NVML library not found";
    EXPECT_EQ(refusal(plan(r, m), ErrorCode::failed),
              "launch: --nproc-per-node gpu, but no GPU is visible (NVML library not found)");
    r.no_gpus = true;
    EXPECT_EQ(refusal(plan(r, m), ErrorCode::failed),
              "launch: --nproc-per-node gpu, but no GPU is visible (--no-gpus)");
    for (const std::string bad : {"0", "1025", "two", "", "-1"}) {
        LaunchRequest n = script();
        n.nproc_per_node = bad;
        EXPECT_EQ(refusal(plan(n, m), ErrorCode::invalid_argument),
                  "launch: --nproc-per-node takes a number from 1 to 1024, 'gpu' or 'auto', not '" + bad + "'");
    }
}

TEST(LaunchPlan, BindingGivesEachRankItsOwnGpu) {
    FakeMachine m;
    m.gpus = {"GPU-a", "GPU-b", "GPU-c"};
    LaunchRequest r = script();
    r.nproc_per_node = "2";
    r.bind_gpus = true;
    EXPECT_EQ(plan(r, m)->extras.gpus, (std::vector<std::string>{"GPU-a", "GPU-b"}));
    r.nproc_per_node = "4";
    EXPECT_EQ(refusal(plan(r, m), ErrorCode::failed),
              "launch: --bind-gpus gives each rank its own GPU, but 4 ranks would share 3 GPUs: two ranks on one GPU "
              "(use --nproc-per-node gpu)");
    r.bind_gpus = false;
    Result<LaunchPlan> shared = plan(r, m);
    ASSERT_TRUE(shared.ok());
    EXPECT_TRUE(shared->extras.gpus.empty());
    EXPECT_EQ(shared->warnings, std::vector<std::string>{"4 ranks on 3 GPUs: ranks will share GPUs"});
    m.gpus.clear();
    r.bind_gpus = true;
    EXPECT_EQ(refusal(plan(r, m), ErrorCode::failed), "launch: --bind-gpus, but no GPU is visible");
}

TEST(LaunchPlan, MasterPort) {
    FakeMachine m;
    LaunchRequest r = script();
    r.master_port = "29511";
    EXPECT_EQ(plan(r, m)->topology.master_port, 29511);
    EXPECT_EQ(m.free_port_calls, 0);
    r.master_port = "auto";
    EXPECT_EQ(plan(r, m)->topology.master_port, 41234);
    for (const std::string bad : {"0", "65536", "http", "-5"}) {
        r.master_port = bad;
        EXPECT_EQ(refusal(plan(r, m), ErrorCode::invalid_argument), "launch: --master-port takes 1 to 65535 or 'auto'")
            << bad;
    }
    LaunchRequest two = script();
    two.nnodes = 2;
    two.master_addr = "10.0.0.1";
    EXPECT_EQ(plan(two, m)->topology.master_port, 29500) << "torchrun's default across nodes";
    two.master_port = "auto";
    EXPECT_EQ(refusal(plan(two, m), ErrorCode::invalid_argument),
              "launch: --master-port auto needs one node (or Slurm): name the port every node uses");

    // Rank 0's store listens here: its port must be free here; another node's is not checked.
    m.port_taken = true;
    r.master_port = "29511";
    EXPECT_EQ(refusal(plan(r, m), ErrorCode::failed), "launch: port 29511 is taken on this node");
    two.master_port = "";
    two.node_rank = 1;
    m.ports_checked.clear();
    EXPECT_TRUE(plan(two, m).ok());
    EXPECT_TRUE(m.ports_checked.empty());
}

TEST(LaunchPlan, InsideSlurmThePlacementComesFromTheJob) {
    FakeMachine m;
    Result<LaunchPlan> p = plan(script(), m, kSlurmNode1);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->topology.nnodes, 2);
    EXPECT_EQ(p->topology.node_rank, 1);
    EXPECT_EQ(p->topology.master_addr, "gpu07");
    EXPECT_EQ(p->topology.master_port, 20000 + 4711);
    EXPECT_EQ(p->topology.run_id, "slurm-4711") << "the same on every node";
    EXPECT_EQ(m.free_port_calls, 0);
    EXPECT_TRUE(m.ports_checked.empty()) << "node 1 does not host the store";

    // Flags of the topology take over from Slurm's placement.
    LaunchRequest r = script();
    r.nnodes = 1;
    p = plan(r, m, kSlurmNode1);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->topology.nnodes, 1);
    EXPECT_EQ(p->topology.master_addr, "127.0.0.1");
    EXPECT_EQ(p->topology.run_id, "20261202-120000-abcdef");

    std::map<std::string, std::string> broken = kSlurmNode1;
    broken["SLURM_NODEID"] = "5";
    EXPECT_EQ(refusal(plan(script(), m, broken), ErrorCode::failed).rfind("launch: ", 0), 0u);
}

TEST(LaunchPlan, AFailedMachineReadIsTheError) {
    FakeMachine m;
    LaunchProbes p = m.probes();
    p.machine = []() -> Result<LaunchMachine> { return make_error("/etc/baton.toml: line 3: unknown key 'x'"); };
    Result<LaunchPlan> r = plan_launch(script(), test::env_lookup({}), p);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "/etc/baton.toml: line 3: unknown key 'x'");
}

TEST(LaunchPlan, NcclPresetsSetTheSwitchesAndRefuseNonsense) {
    FakeMachine m;
    LaunchRequest r = script();
    r.nnodes = 2;
    r.node_rank = 1;
    r.master_addr = "10.0.0.1";
    r.master_port = "29500";
    r.nccl = {"socket,debug"};
    Result<LaunchPlan> p = plan(r, m);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(m.routed_to, std::vector<std::string>{"10.0.0.1"}) << "the route to the master address";
    EXPECT_EQ(p->extras.nccl_socket_ifname, "ib0");
    EXPECT_EQ(p->extras.nccl_ib_disable, "1");
    EXPECT_EQ(p->extras.nccl_debug, "INIT,COLL,NET");
    // ib: the same interface for NCCL's bootstrap, InfiniBand on; --nccl-debug's subsystems win.
    r.nccl = {"ib", "debug"};
    r.nccl_debug = "INIT";
    p = plan(r, m);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->extras.nccl_ib_disable, "0");
    EXPECT_EQ(p->extras.nccl_debug, "INIT");
    // No route: said before the start, NCCL left to choose.
    r.master_addr = "10.9.9.9";
    r.nccl = {"socket"};
    p = plan(r, m);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->extras.nccl_socket_ifname, "");
    ASSERT_EQ(p->warnings.size(), 1u);
    EXPECT_NE(p->warnings[0].find("no interface routes to the master address 10.9.9.9"), std::string::npos);
    // Nonsense: a usage error, before the machine or the script is read.
    m.missing.insert("train.py");
    const int reads = m.machine_reads;
    for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{{"tcp"}, {"socket,ib"}, {""}}) {
        r.nccl = bad;
        p = plan(r, m);
        EXPECT_EQ(m.machine_reads, reads);
        ASSERT_FALSE(p.ok());
        EXPECT_TRUE(p.is(ErrorCode::invalid_argument)) << p.error().message;
        EXPECT_EQ(p.error().message.rfind("launch: --nccl", 0), 0u) << p.error().message;
    }
}
