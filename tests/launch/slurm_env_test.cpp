// Slurm's host lists expanded as `scontrol show hostnames` does, and the node's place read from
// the variables srun sets.
#include <gtest/gtest.h>

#include <map>

#include "launch/slurm_env.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::launch;

namespace {

std::vector<std::string> hosts(const std::string& list) {
    Result<std::vector<std::string>> r = expand_hostlist(list);
    EXPECT_TRUE(r.ok()) << list << ": " << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : std::vector<std::string>{};
}

}  // namespace

// Each expected list is what Slurm 22.05's `scontrol show hostnames` printed for the same input.
TEST(SlurmHostlist, ExpandsAsScontrolDoes) {
    using V = std::vector<std::string>;
    EXPECT_EQ(hosts("n[01-03,7]"), (V{"n01", "n02", "n03", "n7"}));
    EXPECT_EQ(hosts("a[1-2]b[1-2]"), (V{"a1b1", "a1b2", "a2b1", "a2b2"}));
    EXPECT_EQ(hosts("c[09-11]"), (V{"c09", "c10", "c11"}));
    EXPECT_EQ(hosts("x[1-3],y"), (V{"x1", "x2", "x3", "y"}));
    EXPECT_EQ(hosts("n[7,01-03]"), (V{"n7", "n01", "n02", "n03"}));
    EXPECT_EQ(hosts("n[1-10]").size(), 10u);
    EXPECT_EQ(hosts("n[1-10]").back(), "n10");
    EXPECT_EQ(hosts("a,b,a"), (V{"a", "b", "a"}));
    EXPECT_EQ(hosts("gpu-node12"), (V{"gpu-node12"}));
    EXPECT_EQ(hosts(""), V{});
}

TEST(SlurmHostlist, HostileListsAreErrorsNotHangs) {
    for (const std::string bad : {"n[010-8]", "n[3-1]", "n[1-2", "n1-2]", "n[a-b]", "n[[1]]", "n[]", "n[1-]",
                                  "n[0-99999999999999999999]", "n[0-999999]", "a[0-999]b[0-999]"}) {
        Result<std::vector<std::string>> r = expand_hostlist(bad);
        EXPECT_FALSE(r.ok()) << bad;
        if (!r.ok()) {
            EXPECT_NE(r.error().message.find("invalid host list"), std::string::npos) << r.error().message;
        }
    }
}

TEST(SlurmPlacement, OutsideSlurmThereIsNone) {
    Result<std::optional<SlurmPlacement>> p = slurm_placement(test::env_lookup({}));
    ASSERT_TRUE(p.ok());
    EXPECT_FALSE(p->has_value());
}

TEST(SlurmPlacement, OneLauncherPerNodeOfATwoNodeJob) {
    Result<std::optional<SlurmPlacement>> p = slurm_placement(test::env_lookup({{"SLURM_JOB_ID", "4711"},
                                                                                {"SLURM_JOB_NODELIST", "gpu[07-08]"},
                                                                                {"SLURM_JOB_NUM_NODES", "2"},
                                                                                {"SLURM_NODEID", "1"},
                                                                                {"SLURM_PROCID", "1"},
                                                                                {"SLURM_LOCALID", "0"},
                                                                                {"SLURM_NTASKS", "2"}}));
    ASSERT_TRUE(p.ok()) << p.error().message;
    ASSERT_TRUE(p->has_value());
    EXPECT_EQ((*p)->nnodes, 2);
    EXPECT_EQ((*p)->node_rank, 1);
    EXPECT_EQ((*p)->master_addr, "gpu07");
    EXPECT_EQ((*p)->master_port, 20000 + 4711);
    EXPECT_EQ((*p)->job_id, "4711");
    EXPECT_EQ(slurm_master_port("123456"), 20000 + 123456 % 20000);
}

TEST(SlurmPlacement, ContradictionsAreNamed) {
    auto error = [](const std::map<std::string, std::string>& m) {
        Result<std::optional<SlurmPlacement>> p = slurm_placement(test::env_lookup(m));
        return p.ok() ? std::string() : p.error().message;
    };
    const std::map<std::string, std::string> base = {
        {"SLURM_JOB_ID", "9"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_NODEID", "0"}};
    auto with = [&](const std::string& k, const std::string& v) {
        auto m = base;
        m[k] = v;
        return m;
    };
    EXPECT_EQ(error(base), "");
    EXPECT_NE(error(with("SLURM_NTASKS", "8")).find("one baton launch per node"), std::string::npos);
    EXPECT_NE(error(with("SLURM_JOB_NUM_NODES", "3")).find("names 2 hosts"), std::string::npos);
    EXPECT_NE(error(with("SLURM_NODEID", "2")).find("not a node"), std::string::npos);
    EXPECT_NE(error(with("SLURM_NODEID", "x")).find("not a node"), std::string::npos);
    EXPECT_NE(error(with("SLURM_JOB_NODELIST", "n[2-1]")).find("SLURM_JOB_NODELIST"), std::string::npos);
    EXPECT_NE(error(with("SLURM_JOB_ID", "12;rm")).find("not a job number"), std::string::npos);
}
