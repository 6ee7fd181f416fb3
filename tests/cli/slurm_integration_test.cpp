// baton submit --slurm against a real Slurm: Debian's munged, slurmctld and slurmd started by the
// test on loopback (free ports, a generated slurm.conf, state and spool in a temporary directory),
// with four GRES GPUs when this machine lets the test make their device nodes (else CPUs only, and
// the test says so). A job runs to completion under `baton run` (its run is in the history),
// shows in `baton queue` with Slurm's state, its output is read by `baton logs`, `baton wait`
// exits with its status, and `baton cancel` cancels a second one through scancel. A second cluster
// tracks its jobs with cgroups (proctrack/cgroup, Slurm's own cgroup v1 hierarchy): baton names the
// job a process serves from its cgroup, and the job from the task's environment or from scontrol.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <functional>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <netinet/in.h>
#include <random>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "test_support.hpp"

using namespace baton;
using nlohmann::json;

namespace {

int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
}

void stop(pid_t pid) {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    const double until = monotonic_seconds() + 10;
    while (monotonic_seconds() < until) {
        if (waitpid(pid, nullptr, WNOHANG) == pid) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
}

// munged + slurmctld + slurmd of the test's own, stopped by pid.
class Cluster {
  public:
    // `cgroups`: jobs tracked in cgroups (proctrack/cgroup, task/cgroup on cgroup v1), as production
    // clusters run them; else by process tree (linuxproc), which any machine allows. `extra_conf`:
    // lines added to slurm.conf (an epilog). `accounting`: a slurmdbd of its own, on a MariaDB server of
    // its own (sacct, sacctmgr: where jobstats reads a job's AdminComment). `constrain` (with
    // cgroups): jobs confined to their cores and memory, their usage in cgroups (ConstrainCores,
    // ConstrainRAMSpace, jobacct_gather/cgroup: the setup jobstats asks for).
    explicit Cluster(bool cgroups = false, const std::string& extra_conf = "", bool accounting = false,
                     bool constrain = false) {
        if (geteuid() != 0) {
            skip_ = "slurmd starts jobs as their users and needs root";
            return;
        }
        for (const char* p : {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch"})
            if (access(p, X_OK) != 0) {
                skip_ = std::string(p) + " is not installed (scripts/test.sh installs slurm-wlm's daemons and munge)";
                return;
            }
        if (accounting)
            for (const char* p : {"/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db", "/usr/bin/mariadb",
                                  "/usr/sbin/slurmdbd", "/usr/bin/sacctmgr", "/usr/bin/sacct"})
                if (access(p, X_OK) != 0) {
                    skip_ = std::string(p) + " is not installed (scripts/test.sh installs slurmdbd and mariadb-server)";
                    return;
                }
        if (cgroups && access("/sys/fs/cgroup/freezer/cgroup.procs", W_OK) != 0) {
            skip_ =
                "Slurm 22.05 tracks jobs in cgroup v1 here; this host has no writable v1 freezer hierarchy "
                "(its cgroup/v2 plugin needs systemd's dbus)";
            return;
        }
        const std::string d = dir_.path();
        chmod(d.c_str(), 0711);
        for (const char* sub : {"/state", "/spool", "/work", "/dev"}) mkdir((d + sub).c_str(), 0755);
        {
            std::random_device rd;
            std::string key(1024, '\0');
            for (char& c : key) c = static_cast<char>(rd());
            const int fd = open((d + "/munge.key").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            EXPECT_EQ(write(fd, key.data(), key.size()), 1024);
            close(fd);
        }
        munged_ = test::start_process(
            {"/usr/sbin/munged", "-F", "-f", "--socket=" + d + "/munge.sock", "--key-file=" + d + "/munge.key",
             "--pid-file=" + d + "/munged.pid", "--log-file=" + d + "/munged.log", "--seed-file=" + d + "/munged.seed"},
            {}, d + "/munged.out");
        // GRES GPUs need device files; /dev/null's numbers stand in for them (Slurm only names them).
        gpus_ = 4;
        for (int i = 0; i < 4; ++i)
            if (mknod((d + "/dev/nvidia" + std::to_string(i)).c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) gpus_ = 0;
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        std::string name = host;
        name = name.substr(0, name.find('.'));
        if (cgroups) {
            // Slurm's v1 root in each controller; removed at the end unless it was there before.
            for (const char* c : {"freezer", "cpuset", "memory", "devices", "cpuacct", "cpu"})
                for (const std::string& root : {std::string("slurm"), "slurm_" + name}) {
                    const std::string path = std::string("/sys/fs/cgroup/") + c + "/" + root;
                    if (access(path.c_str(), F_OK) != 0) cgroup_roots_.push_back(path);
                }
            const char* yes = constrain ? "yes" : "no";
            std::ofstream(d + "/cgroup.conf")
                << "CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n"
                << "ConstrainCores=" << yes << "\nConstrainRAMSpace=" << yes << "\nConstrainDevices=no\n";
        }
        const int dbd_port = accounting ? free_port() : 0;
        std::random_device job_ids;
        const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        std::ofstream conf(d + "/slurm.conf");
        conf << "ClusterName=batontest\nSlurmctldHost=" << name << "(127.0.0.1)\n"
             << "SlurmctldPort=" << free_port() << "\nSlurmdPort=" << free_port() << "\n"
             << "SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nAuthInfo=socket=" << d << "/munge.sock\n"
             << "CredType=cred/munge\nStateSaveLocation=" << d << "/state\nSlurmdSpoolDir=" << d << "/spool\n"
             << "SlurmctldPidFile=" << d << "/slurmctld.pid\nSlurmdPidFile=" << d << "/slurmd.pid\n"
             << "SlurmctldLogFile=" << d << "/slurmctld.log\nSlurmdLogFile=" << d << "/slurmd.log\n"
             << (cgroups ? "ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup\n"
                         : "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n")
             // job ids of their own, so job_N cgroups of two clusters never meet
             << "FirstJobId=" << 1000 + job_ids() % 100000
             << "\nSelectType=select/cons_tres\n"
             // (memory a consumable resource when confined: else Slurm gives each job the node's)
             << "SelectTypeParameters=" << (constrain ? "CR_Core_Memory" : "CR_Core")
             << "\nSchedulerType=sched/backfill\nReturnToService=2\nMpiDefault=none\n"
             << "JobCompType=jobcomp/none\n"
             << (accounting ? "AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=127.0.0.1\n"
                              "AccountingStoragePort=" +
                                  std::to_string(dbd_port) +
                                  // (the munge socket for slurmdbd's connections: AccountingStoragePass)
                                  "\nAccountingStoragePass=" + d + "/munge.sock\n"
                            : "AccountingStorageType=accounting_storage/none\n")
             << "JobAcctGatherType=jobacct_gather/" << (cgroups && constrain ? "cgroup" : "none")
             << "\nSlurmdParameters=config_overrides\nMinJobAge=600\n"
             << (gpus_ ? "GresTypes=gpu\n" : "") << "NodeName=" << name << " NodeAddr=127.0.0.1 CPUs=" << cpus
             << " RealMemory=1000" << (gpus_ ? " Gres=gpu:4" : "") << " State=UNKNOWN\n"
             << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
             << extra_conf;
        conf.close();
        if (gpus_) std::ofstream(d + "/gres.conf") << "AutoDetect=off\nName=gpu File=" << d << "/dev/nvidia[0-3]\n";
        env_ = {{"SLURM_CONF", d + "/slurm.conf"},
                {"BATON_SYSTEM_CONFIG", "/dev/null"},
                {"XDG_CONFIG_HOME", d},
                {"XDG_STATE_HOME", d + "/state-baton"},
                {"BATON_SOCKET", d + "/baton.sock"},
                {"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}};
        if (accounting && !start_accounting(name, dbd_port)) return;
        ctld_ = test::start_process({"/usr/sbin/slurmctld", "-D", "-f", d + "/slurm.conf"}, {}, d + "/slurmctld.out");
        // slurmd registers with the controller once it answers.
        if (!test::eventually(
                [&] {
                    return test::run({"/usr/bin/scontrol", "ping"}, env_, 10).out.find(" is UP") != std::string::npos;
                },
                60, 0.1)) {
            ADD_FAILURE() << "slurmctld never answered\n" << test::read_text(d + "/slurmctld.out");
            return;
        }
        slurmd_ = test::start_process({"/usr/sbin/slurmd", "-D", "-f", d + "/slurm.conf"}, {}, d + "/slurmd.out");
        const double until = monotonic_seconds() + 60;
        while (monotonic_seconds() < until) {
            test::CommandResult s = test::run({"/usr/bin/sinfo", "-h", "-o", "%T"}, env_, 10);
            if (s.out.rfind("idle", 0) == 0) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        ADD_FAILURE() << "the node never became idle\n"
                      << test::read_text(d + "/slurmctld.log") << test::read_text(d + "/slurmd.log");
    }
    ~Cluster() {
        if (ctld_ > 0) test::run({"/usr/bin/scancel", "--full", "-u", "root"}, env_, 10);
        stop(slurmd_);
        stop(ctld_);
        stop(slurmdbd_);
        stop(mariadb_);
        stop(munged_);
        // What slurmd left of its cgroup tree (empty directories: its jobs have ended).
        for (const std::string& root : cgroup_roots_)
            if (access(root.c_str(), F_OK) == 0)
                test::run({"/usr/bin/find", root, "-depth", "-type", "d", "-exec", "rmdir", "{}", ";"}, {}, 10);
    }
    const std::string& skip() const { return skip_; }
    int gpus() const { return gpus_; }
    std::string work() const { return dir_.path() + "/work"; }
    const std::string& dir() const { return dir_.path(); }
    test::CommandResult baton(std::vector<std::string> args, double timeout = 60) const {
        args.insert(args.begin(), test::baton_binary());
        return test::run(args, env_, timeout);
    }
    // Slurm's own commands, against this cluster (with `extra` variables over its environment).
    test::CommandResult slurm(const std::vector<std::string>& args,
                              const std::map<std::string, std::string>& extra = {}) const {
        std::map<std::string, std::string> env = env_;
        for (const auto& [k, v] : extra) env[k] = v;
        return test::run(args, env, 60);
    }
    std::string node() const {
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        const std::string name = host;
        return name.substr(0, name.find('.'));
    }
    // baton as the unprivileged user nobody (a copy of the binary in the cluster's directory, which
    // nobody may enter): it cannot read a root job's environment.
    test::CommandResult baton_as_nobody(const std::vector<std::string>& args) const {
        const std::string copy = dir_.path() + "/baton";
        if (access(copy.c_str(), X_OK) != 0) test::run({"/bin/cp", test::baton_binary(), copy});
        std::vector<std::string> argv{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", copy};
        argv.insert(argv.end(), args.begin(), args.end());
        return test::run(argv, env_, 60);
    }
    // The job's row in `baton queue --all --json`, once `pred` holds of it (or the last one seen).
    json row(const std::string& id, const std::function<bool(const json&)>& pred, double seconds = 60) const {
        json last;
        const double until = monotonic_seconds() + seconds;
        while (monotonic_seconds() < until) {
            json all = json::parse(baton({"queue", "--all", "--json"}).out, nullptr, false);
            if (all.is_array())
                for (const json& j : all)
                    if (j.value("id", json()).is_string() && j["id"] == id) last = j;
            if (!last.is_null() && pred(last)) return last;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        return last;
    }

  private:
    // MariaDB (its own data directory, on loopback) and slurmdbd on it, the cluster registered; false
    // (and a failure said) when either does not come up.
    bool start_accounting(const std::string& host, int dbd_port) {
        const std::string d = dir_.path();
        const int db_port = free_port();
        mkdir((d + "/mariadb").c_str(), 0700);
        test::CommandResult init =
            test::run({"/usr/bin/mariadb-install-db", "--no-defaults", "--datadir=" + d + "/mariadb",
                       "--auth-root-authentication-method=normal", "--skip-test-db", "--user=root"},
                      {}, 120);
        if (init.exit_code != 0) {
            ADD_FAILURE() << "mariadb-install-db: " << init.out << init.err;
            return false;
        }
        mariadb_ = test::start_process(
            {"/usr/sbin/mariadbd", "--no-defaults", "--datadir=" + d + "/mariadb", "--socket=" + d + "/mariadb.sock",
             "--bind-address=127.0.0.1", "--port=" + std::to_string(db_port), "--user=root",
             "--pid-file=" + d + "/mariadb.pid", "--skip-log-bin", "--innodb-buffer-pool-size=16M"},
            {}, d + "/mariadb.log");
        std::ofstream conf(d + "/slurmdbd.conf");
        conf << "AuthType=auth/munge\nAuthInfo=socket=" << d << "/munge.sock\nDbdHost=" << host
             << "\nDbdAddr=127.0.0.1\nDbdPort=" << dbd_port << "\nSlurmUser=root\n"
             << "StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\nStoragePort=" << db_port
             << "\nStorageUser=root\nStorageLoc=slurm_acct_db\nLogFile=" << d << "/slurmdbd.log\nPidFile=" << d
             << "/slurmdbd.pid\n";
        conf.close();
        chmod((d + "/slurmdbd.conf").c_str(), 0600);  // slurmdbd refuses a config others may read
        const double db_until = monotonic_seconds() + 60;
        while (test::run({"/usr/bin/mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", std::to_string(db_port), "-u",
                          "root", "-e", "select 1"},
                         {}, 10)
                   .exit_code != 0) {
            if (monotonic_seconds() > db_until) {
                ADD_FAILURE() << "MariaDB never answered\n" << test::read_text(d + "/mariadb.log");
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        // slurmdbd finds slurmdbd.conf beside $SLURM_CONF (it has no -f).
        slurmdbd_ =
            test::start_process({"/usr/sbin/slurmdbd", "-D"}, {{"SLURM_CONF", d + "/slurm.conf"}}, d + "/slurmdbd.out");
        const double dbd_until = monotonic_seconds() + 60;
        while (test::run({"/usr/bin/sacctmgr", "-i", "add", "cluster", "batontest"}, env_, 10).exit_code != 0 &&
               test::run({"/usr/bin/sacctmgr", "-n", "list", "cluster", "format=cluster"}, env_, 10)
                       .out.find("batontest") == std::string::npos) {
            if (monotonic_seconds() > dbd_until) {
                test::CommandResult last =
                    test::run({"/usr/bin/sacctmgr", "-i", "add", "cluster", "batontest"}, env_, 10);
                ADD_FAILURE() << "slurmdbd never answered\n"
                              << last.out << last.err << test::read_text(d + "/slurmdbd.log")
                              << test::read_text(d + "/slurmdbd.out") << test::read_text(d + "/slurm.conf");
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
        }
        return true;
    }

    test::TempDir dir_;
    std::string skip_;
    int gpus_ = 0;
    std::map<std::string, std::string> env_;
    pid_t munged_ = -1, ctld_ = -1, slurmd_ = -1, slurmdbd_ = -1, mariadb_ = -1;
    std::vector<std::string> cgroup_roots_;
};

// The job's entry in `baton snapshot --json`'s jobs[], or null.
json job_entry(const json& snap, const std::string& label) {
    if (!snap.is_object()) return {};  // baton printed no snapshot
    for (const json& j : snap.value("jobs", json::array()))
        if (j.value("label", "") == label) return j;
    return {};
}

// `baton serve` with `args`, alone in `dir` (no config, its state and socket there), logging to
// dir/agent.log.
pid_t start_agent(const test::TempDir& dir, const std::vector<std::string>& args) {
    std::vector<std::string> argv{test::baton_binary(), "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::start_process(argv,
                               {{"BATON_SYSTEM_CONFIG", "/dev/null"},
                                {"XDG_CONFIG_HOME", dir.path()},
                                {"XDG_STATE_HOME", dir.path()},
                                {"BATON_SOCKET", dir.path() + "/baton.sock"}},
                               dir.path() + "/agent.log");
}

}  // namespace

TEST(SlurmHandOff, SubmitRunsUnderBatonRunListsWaitsReadsAndCancels) {
    Cluster c;
    if (!c.skip().empty()) GTEST_SKIP() << c.skip();
    std::printf("Slurm with %s\n", c.gpus() ? "4 GRES GPUs" : "CPUs only (no device nodes could be made)");

    // --dry-run: the script, nothing submitted.
    test::CommandResult dry = c.baton({"submit", "--slurm", "--dry-run", "--cwd", c.work(), "--", "true"});
    ASSERT_EQ(dry.exit_code, 0) << dry.err;
    EXPECT_NE(dry.out.find("#SBATCH --chdir=" + c.work() + "\n"), std::string::npos) << dry.out;
    EXPECT_NE(dry.out.find(" run --name 'true' -- 'true'\n"), std::string::npos) << dry.out;

    std::vector<std::string> ask{"submit", "--slurm", "--name", "slurm-ok", "--cwd", c.work()};
    if (c.gpus()) ask.insert(ask.end(), {"--gpus", "1"});
    ask.insert(ask.end(), {"--", "sh", "-c", "echo gpus=${CUDA_VISIBLE_DEVICES:-none}; echo to-err >&2; exit 0"});
    test::CommandResult sub = c.baton(ask);
    ASSERT_EQ(sub.exit_code, 0) << sub.err;
    ASSERT_EQ(sub.out.rfind("slurm:", 0), 0u) << sub.out;
    const std::string id = sub.out.substr(0, sub.out.size() - 1);

    test::CommandResult w = c.baton({"wait", id}, 90);
    EXPECT_EQ(w.exit_code, 0) << w.out << w.err << test::read_text(c.dir() + "/slurmctld.log");
    const json done = c.row(id, [](const json& j) { return j.value("state", "") == "completed"; });
    EXPECT_EQ(done.value("state", ""), "completed") << done.dump();
    EXPECT_EQ(done.value("name", ""), "slurm-ok");
    if (c.gpus()) {
        EXPECT_EQ(done.value("gpus_count", 0u), 1u) << done.dump();
    }
    EXPECT_EQ(c.baton({"logs", id}).out, c.gpus() ? "gpus=0\n" : "gpus=none\n");
    // Its stderr holds the command's and baton run's summary; its run is in the history.
    const std::string err = c.baton({"logs", id, "--stderr"}).out;
    EXPECT_NE(err.find("to-err\n"), std::string::npos) << err;
    EXPECT_NE(err.find("baton run: slurm-ok exited with 0"), std::string::npos) << err;
    test::CommandResult runs = c.baton({"runs", "--json"});
    EXPECT_NE(runs.out.find("\"slurm-ok\""), std::string::npos) << runs.out << runs.err;
    const std::string table = c.baton({"queue", "--all"}).out;
    EXPECT_NE(table.find(id), std::string::npos) << table;
    EXPECT_NE(table.find("completed"), std::string::npos) << table;
    test::CommandResult show = c.baton({"show", id});
    EXPECT_NE(show.out.find("JobState=COMPLETED"), std::string::npos) << show.out << show.err;
    const json shown = json::parse(c.baton({"show", id, "--json"}).out, nullptr, false);
    EXPECT_EQ(shown.value("/scontrol/JobName"_json_pointer, ""), "slurm-ok") << shown.dump();
    // Held at submit (sbatch --hold): pending until baton release.
    test::CommandResult held = c.baton({"submit", "--slurm", "--hold", "--cwd", c.work(), "--", "true"});
    ASSERT_EQ(held.exit_code, 0) << held.err;
    const std::string held_id = held.out.substr(0, held.out.size() - 1);
    const json pending = c.row(held_id, [](const json& j) { return j.value("state", "") == "pending"; });
    EXPECT_EQ(pending.value("state", ""), "pending") << pending.dump();
    EXPECT_NE(pending.value("waiting", "").find("Held"), std::string::npos) << pending.dump();
    EXPECT_EQ(c.baton({"release", held_id}).out, "job " + held_id + ": released\n");
    EXPECT_EQ(c.baton({"wait", held_id}, 90).exit_code, 0);
    // A failing command: wait exits with its status.
    test::CommandResult bad = c.baton({"submit", "--slurm", "--cwd", c.work(), "--", "sh", "-c", "exit 7"});
    ASSERT_EQ(bad.exit_code, 0) << bad.err;
    EXPECT_EQ(c.baton({"wait", bad.out.substr(0, bad.out.size() - 1)}, 90).exit_code, 7);

    // A second one, cancelled while it runs: scancel.
    test::CommandResult sleeper =
        c.baton({"submit", "--slurm", "--name", "long", "--cwd", c.work(), "--", "sleep", "300"});
    ASSERT_EQ(sleeper.exit_code, 0) << sleeper.err;
    const std::string long_id = sleeper.out.substr(0, sleeper.out.size() - 1);
    const json running = c.row(long_id, [](const json& j) { return j.value("state", "") == "running"; });
    EXPECT_EQ(running.value("state", ""), "running") << running.dump();
    // (a running job is listed without --all)
    EXPECT_NE(c.baton({"queue"}).out.find(long_id), std::string::npos);
    test::CommandResult cancel = c.baton({"cancel", long_id});
    EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
    EXPECT_EQ(cancel.out, "job " + long_id + ": cancelling\n");
    const json cancelled = c.row(long_id, [](const json& j) { return j.value("state", "") == "cancelled"; });
    EXPECT_EQ(cancelled.value("state", ""), "cancelled") << cancelled.dump();
    EXPECT_EQ(c.baton({"queue"}).out.find(long_id), std::string::npos);

    // Refusals: what only this machine's queue does, and a job Slurm does not know.
    test::CommandResult share = c.baton({"submit", "--slurm", "--share", "--", "true"});
    EXPECT_EQ(share.exit_code, 2);
    EXPECT_NE(share.err.find("--slurm with --share"), std::string::npos) << share.err;
    test::CommandResult unknown = c.baton({"cancel", "slurm:999999"});
    EXPECT_NE(unknown.exit_code, 0) << unknown.out << unknown.err;
    EXPECT_NE(unknown.err.find("scancel slurm:999999: scancel: error: Kill job error on job id 999999"),
              std::string::npos)
        << unknown.err;
}

TEST(SlurmJobs, AProcessIsNamedByItsJobsCgroupAndTheJobByItsEnvironmentOrScontrol) {
    Cluster c(/*cgroups=*/true);
    if (!c.skip().empty()) GTEST_SKIP() << c.skip();
    test::CommandResult sub =
        c.slurm({"/usr/bin/sbatch", "--parsable", "-J", "fleet-train", "-D", c.work(), "--wrap", "sleep 300"});
    ASSERT_EQ(sub.exit_code, 0) << sub.err;
    const std::string id = sub.out.substr(0, sub.out.find_first_of(";\n"));
    const std::string label = "slurm:" + id;
    // Once the batch step's task runs: the process in the job's cgroup, named from its environment.
    json snap, job;
    const double until = monotonic_seconds() + 60;
    while (monotonic_seconds() < until) {
        snap = json::parse(c.baton({"snapshot", "--json", "--no-gpus"}).out, nullptr, false);
        job = job_entry(snap, label);
        if (!job.is_null() && job.value("names_from", "") == "environ") break;
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    ASSERT_FALSE(job.is_null()) << test::read_text(c.dir() + "/slurmd.log");
    EXPECT_EQ(job.value("kind", ""), "slurm");
    EXPECT_EQ(job.value("id", ""), id);
    EXPECT_EQ(job.value("name", ""), "fleet-train");
    EXPECT_EQ(job.value("user", ""), "root");
    EXPECT_EQ(job.value("partition", ""), "debug");
    EXPECT_EQ(job.value("names_from", ""), "environ") << job.dump();
    EXPECT_EQ(job.value("allocated_cpus", 0u), 1u) << job.dump();
    // The sleep is one of its processes, in step "batch", its cgroup Slurm's.
    bool found = false;
    for (const json& p : snap["processes"]) {
        if (p.value("command", "") != "sleep 300" || !p.contains("job")) continue;
        found = true;
        EXPECT_EQ(p["job"].value("id", ""), id) << p.dump();
        EXPECT_EQ(p["job"].value("step", ""), "batch") << p.dump();
        EXPECT_NE(p.value("cgroup", "").find("/job_" + id + "/step_batch"), std::string::npos) << p.dump();
        const auto pids = job["pids"].get<std::vector<std::uint32_t>>();
        EXPECT_NE(std::find(pids.begin(), pids.end(), p["pid"].get<std::uint32_t>()), pids.end()) << job.dump();
    }
    EXPECT_TRUE(found) << snap["processes"].dump();
    // As a user who cannot read root's environment: one real scontrol names it (a snapshot waits 2 s
    // for it; a machine busy with other tests may take longer, so a few tries).
    json named = json::object();
    for (int attempt = 0; attempt < 5 && named.value("names_from", "") != "scontrol"; ++attempt) {
        named =
            job_entry(json::parse(c.baton_as_nobody({"snapshot", "--json", "--no-gpus"}).out, nullptr, false), label);
        if (!named.is_object()) named = json::object();  // not found (yet): value() needs an object
    }
    EXPECT_EQ(named.value("names_from", ""), "scontrol") << named.dump();
    EXPECT_EQ(named.value("name", ""), "fleet-train") << named.dump();
    EXPECT_EQ(named.value("user", ""), "root") << named.dump();
    EXPECT_EQ(named.value("partition", ""), "debug") << named.dump();
    EXPECT_FALSE(named.contains("allocated_memory_bytes")) << named.dump();  // Mem=0: no memory asked for
    // The job as Prometheus sees it.
    const std::string metrics = c.baton({"snapshot", "--prometheus", "--no-gpus"}).out;
    EXPECT_NE(metrics.find("baton_job_info{job_id=\"" + label +
                           "\",kind=\"slurm\",name=\"fleet-train\",user=\"root\",partition=\"debug\"} 1\n"),
              std::string::npos)
        << metrics;
    // Cancelled: no longer a job here.
    EXPECT_EQ(c.slurm({"/usr/bin/scancel", id}).exit_code, 0);
    const double gone_by = monotonic_seconds() + 30;
    while (monotonic_seconds() < gone_by) {
        snap = json::parse(c.baton({"snapshot", "--json", "--no-gpus"}).out, nullptr, false);
        if (job_entry(snap, label).is_null()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    EXPECT_TRUE(job_entry(snap, label).is_null()) << snap["jobs"].dump();
}

// deploy/slurm/baton-healthcheck as slurmd's HealthCheckProgram runs it: a GPU whose kernel log holds
// an XID 79 drains the node (the reason says why, in sinfo -R); once healthy, the drain baton set is
// lifted, and a drain an administrator set is not.
TEST(SlurmHealth, AnXidDrainsTheNodeAndHealthResumesOnlyBatonsDrain) {
    Cluster c;
    if (!c.skip().empty()) GTEST_SKIP() << c.skip();
    test::TempDir d;
    d.write(
        "bad.log",
        "[  812.25] NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n");
    d.write("good.log", "[  5.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n");
    const std::string script = test::source_dir() + "/deploy/slurm/baton-healthcheck";
    auto check = [&](const std::string& log) {
        return c.slurm({"/bin/sh", script},
                       {{"BATON", test::baton_binary()},
                        {"BATON_HEALTH", "--kernel-log " + d.path() + "/" + log},
                        {"NODE", c.node()},
                        {"BATON_NVML_LIBRARY", test::fake_nvml_library("xid")},
                        {"BATON_FAKE_NVML_SCENARIO", test::source_dir() + "/tests/fake_nvml/scenarios/xid.json"}});
    };
    auto node = [&] { return c.slurm({"/usr/bin/scontrol", "show", "node", c.node(), "-o"}).out; };
    test::CommandResult r = check("bad.log");
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    std::string shown = node();
    EXPECT_NE(shown.find("DRAIN"), std::string::npos) << shown;
    EXPECT_NE(shown.find("Reason=baton: xid: GPU1 (00000000:2A:00.0): XID 79 (GPU has fallen off the bus)"),
              std::string::npos)
        << shown;
    r = check("good.log");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    shown = node();
    EXPECT_EQ(shown.find("DRAIN"), std::string::npos) << shown;
    // An administrator's drain stays, however healthy the GPUs.
    ASSERT_EQ(
        c.slurm({"/usr/bin/scontrol", "update", "nodename=" + c.node(), "state=drain", "reason=maintenance"}).exit_code,
        0);
    r = check("good.log");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    shown = node();
    EXPECT_NE(shown.find("Reason=maintenance"), std::string::npos) << shown;
    EXPECT_NE(shown.find("DRAIN"), std::string::npos) << shown;
    c.slurm({"/usr/bin/scontrol", "update", "nodename=" + c.node(), "state=resume"});
}

// deploy/slurm/baton-jobstats-epilog as slurmctld's EpilogSlurmctld: when a job that burned a core for
// a few seconds ends, the epilog asks the node's agent (baton serve on every interface, with a token,
// reached by the node's name) and stores the job's jobstats summary as JS1 in its AdminComment in the
// accounting database (slurmdbd on MariaDB), and in a spool file; the test reads the database with
// sacct, decodes the summary as jobstats does (base64, gunzip) and finds the job's cores, CPU time and
// memory.
TEST(SlurmJobstats, TheEpilogStoresTheJobsJs1SummaryInItsAdminComment) {
    test::TempDir d;
    chmod(d.path().c_str(), 0755);
    d.write("token", "epilog-Token-7\n");
    const int port = free_port();
    // slurmctld runs the wrapper (it must be there when slurmctld starts), which runs the deploy script
    // with this cluster's settings (epilog.env, written once the cluster's directory exists).
    const std::string wrapper = d.path() + "/epilog";
    d.write("epilog", "#!/bin/sh\n. " + d.path() + "/epilog.env\nexec /bin/sh " + test::source_dir() +
                          "/deploy/slurm/baton-jobstats-epilog 2>>" + d.path() + "/epilog.log\n");
    chmod(wrapper.c_str(), 0755);
    Cluster c(/*cgroups=*/true, "EpilogSlurmctld=" + wrapper + "\n", /*accounting=*/true);
    if (!c.skip().empty()) GTEST_SKIP() << c.skip();
    d.write("epilog.env",
            "export BATON=" + test::baton_binary() +
                " SCONTROL=/usr/bin/scontrol SACCTMGR=/usr/bin/sacctmgr SACCT=/usr/bin/sacct SLURM_CONF=" + c.dir() +
                "/slurm.conf BATON_SYSTEM_CONFIG=/dev/null BATON_JOBSTATS_SPOOL=" + d.path() +
                "/spool\nexport BATON_JOBSTATS='--port " + std::to_string(port) + " --token-file " + d.path() +
                "/token'\n");
    const pid_t agent = start_agent(d, {"--listen", ":" + std::to_string(port), "--token-file", d.path() + "/token",
                                        "--interval", "0.5", "--no-db", "--no-gpus"});
    // Stopped by pid however the test ends (an ASSERT returns early).
    const std::unique_ptr<const pid_t, void (*)(const pid_t*)> agent_guard(&agent, [](const pid_t* p) { stop(*p); });
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    const std::string token = "--token-file=" + d.path() + "/token";
    // Up once it answers (a job it does not know: exit 1 with "no agent knows").
    const double up_by = monotonic_seconds() + 20;
    while (monotonic_seconds() < up_by &&
           c.baton({"jobstats", "0", "--agent", url, token}).err.find("no agent knows") == std::string::npos)
        std::this_thread::sleep_for(std::chrono::milliseconds(200));

    test::CommandResult sub = c.slurm({"/usr/bin/sbatch", "--parsable", "-J", "jobstats-burn", "-D", c.work(), "--wrap",
                                       "timeout 6 sh -c 'while :; do :; done'; sleep 1"});
    ASSERT_EQ(sub.exit_code, 0) << sub.err;
    const std::string id = sub.out.substr(0, sub.out.find_first_of(";\n"));
    // Once it ended: its AdminComment in the accounting database, as jobstats reads it (sacct).
    std::string stored;
    const double until = monotonic_seconds() + 90;
    while (monotonic_seconds() < until) {
        stored = c.slurm({"/usr/bin/sacct", "-j", id, "-n", "-X", "-P", "-o", "AdminComment"}).out;
        stored = stored.substr(0, stored.find('\n'));
        if (!stored.empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    const std::string comment = [&] {
        std::string s = test::read_text(d.path() + "/spool/" + id + ".js1");
        return s.substr(0, s.find('\n'));
    }();
    ASSERT_EQ(comment.rfind("JS1:", 0), 0u)
        << stored << test::read_text(c.dir() + "/slurmctld.log") << test::read_text(d.path() + "/epilog.log")
        << test::read_text(d.path() + "/agent.log");
    // Slurm 23.02 and later store it as given; 22.05 (Debian 12's) lowercases it in sacctmgr, which
    // the epilog reads back and says.
    const std::string version = c.slurm({"/usr/bin/sacctmgr", "--version"}).out;  // "slurm-wlm 22.05.8"
    const std::size_t digit = version.find_first_of("0123456789");
    const int major = digit == std::string::npos ? 0 : std::atoi(version.c_str() + digit);
    if (major < 23) {
        std::string lowered = comment;
        for (char& ch : lowered) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        EXPECT_EQ(stored, lowered);
        // The epilog reads the comment back after setting it: its word may come a moment after sacct's.
        const double said_by = monotonic_seconds() + 30;
        while (monotonic_seconds() < said_by &&
               test::read_text(d.path() + "/epilog.log").find("the AdminComment was stored altered") ==
                   std::string::npos)
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        EXPECT_NE(test::read_text(d.path() + "/epilog.log").find("the AdminComment was stored altered"),
                  std::string::npos)
            << test::read_text(d.path() + "/epilog.log");
    } else {
        EXPECT_EQ(stored, comment) << version;
    }
    d.write("js1.txt", comment.substr(4));
    const test::CommandResult decoded =
        test::run({"/bin/sh", "-c", "base64 -d < " + d.path() + "/js1.txt | gzip -d"}, {}, 10);
    ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
    const json summary = json::parse(decoded.out, nullptr, false);
    ASSERT_TRUE(summary.is_object()) << decoded.out;
    EXPECT_EQ(summary.value("gpus", -1), 0) << summary.dump();
    ASSERT_TRUE(summary["nodes"].contains(c.node())) << summary.dump();
    const json node = summary["nodes"][c.node()];
    EXPECT_EQ(node.value("cpus", 0), 1) << node.dump();
    // About 6 s of one core (the loop), counted from the processes' CPU time; the job's runtime as long.
    EXPECT_GE(node.value("total_time", 0.0), 3.0) << node.dump();
    EXPECT_LE(node.value("total_time", 0.0), 9.0) << node.dump();
    EXPECT_GT(node.value("used_memory", std::uint64_t{0}), 0u) << node.dump();
    EXPECT_GT(node.value("total_memory", std::uint64_t{0}), 0u) << node.dump();
    EXPECT_GE(summary.value("total_time", 0), 4) << summary.dump();
    // And for people, once the agent has seen it go: ended, on this node.
    test::CommandResult text;
    const double ended_by = monotonic_seconds() + 20;
    while (monotonic_seconds() < ended_by) {
        text = c.baton({"jobstats", id, "--nodes", c.node(), "--port", std::to_string(port), token});
        if (text.out.find(": ended, ran ") != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_EQ(text.out.rfind("slurm:" + id + " \"jobstats-burn\" (user root", 0), 0u) << text.out;
    EXPECT_NE(text.out.find(": ended, ran "), std::string::npos) << text.out;
}

namespace {

// One PromQL query against Prometheus' HTTP API: the result vector ([] when it failed).
json prom_query(int port, const std::string& expr) {
    const test::CommandResult r =
        test::run({"/usr/bin/python3", "-c",
                   "import sys, urllib.parse, urllib.request\n"
                   "q = urllib.parse.urlencode({'query': sys.argv[2]})\n"
                   "print(urllib.request.urlopen('http://127.0.0.1:%s/api/v1/query?%s' % (sys.argv[1], q), timeout=5)"
                   ".read().decode())\n",
                   std::to_string(port), expr},
                  {}, 10);
    const json j = json::parse(r.out, nullptr, false);
    if (!j.is_object() || j.value("status", "") != "success" || !j.contains("data")) return json::array();
    return j["data"].value("result", json::array());
}

// The value of a query's first series, NaN when it has none.
double prom_value(int port, const std::string& expr) {
    const json r = prom_query(port, expr);
    if (!r.is_array() || r.empty() || !r[0].contains("value")) return std::nan("");
    return std::atof(r[0]["value"][1].get<std::string>().c_str());
}

}  // namespace

// baton serve --jobstats-compat in place of the cgroup and GPU exporters jobstats is built on:
// Debian's Prometheus scrapes the agent (with the `cluster` target label jobstats' scrape config
// adds) and answers jobstats' own queries (jobstats.py, get_job_stats, word for word) for a running
// job confined by Slurm's cgroups: the memory limit of its --mem, the cores Slurm gave it, the CPU
// seconds its busy loop burns, the memory it holds.
TEST(SlurmJobstats, PrometheusAnswersJobstatsQueriesFromTheAgent) {
    if (access("/usr/bin/prometheus", X_OK) != 0)
        GTEST_SKIP() << "/usr/bin/prometheus is not installed (scripts/test.sh installs it)";
    Cluster c(/*cgroups=*/true, "", /*accounting=*/false, /*constrain=*/true);
    if (!c.skip().empty()) GTEST_SKIP() << c.skip();
    test::TempDir d;
    const int port = free_port(), prom_port = free_port();
    const pid_t agent = start_agent(d, {"--listen", "127.0.0.1:" + std::to_string(port), "--interval", "0.5", "--no-db",
                                        "--no-gpus", "--jobstats-compat"});
    const std::unique_ptr<const pid_t, void (*)(const pid_t*)> agent_guard(&agent, [](const pid_t* p) { stop(*p); });
    d.write("prometheus.yml",
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
            "  - job_name: nodes\n    static_configs:\n      - targets: ['127.0.0.1:" +
                std::to_string(port) + "']\n        labels:\n          cluster: batontest\n");
    const pid_t prometheus = test::start_process(
        {"/usr/bin/prometheus", "--config.file=" + d.path() + "/prometheus.yml",
         "--storage.tsdb.path=" + d.path() + "/tsdb", "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
        {}, d.path() + "/prometheus.log");
    const std::unique_ptr<const pid_t, void (*)(const pid_t*)> prom_guard(&prometheus,
                                                                          [](const pid_t* p) { stop(*p); });

    test::CommandResult sub = c.slurm({"/usr/bin/sbatch", "--parsable", "-J", "jobstats-prom", "--mem=200M", "-D",
                                       c.work(), "--wrap", "timeout 240 sh -c 'while :; do :; done'"});
    ASSERT_EQ(sub.exit_code, 0) << sub.err;
    const std::string id = sub.out.substr(0, sub.out.find_first_of(";\n"));
    // jobstats' queries, as it writes them (diff: the seconds since the job began). Its subqueries
    // ([120s:]) step at Prometheus' default resolution, whole minutes: the memory one answers once a
    // minute has turned since the job's first scrape.
    const std::string sel = "{cluster='batontest',jobid='" + id + "',step='',task=''}";
    const std::string total_time = "max_over_time(cgroup_cpu_total_seconds" + sel + "[120s])";
    const std::string used = "max_over_time(((cgroup_memory_rss_bytes" + sel + "+cgroup_memory_shmem_bytes" + sel +
                             ") or 1*cgroup_memory_rss_bytes" + sel + ")[120s:])";
    double cpu = std::nan(""), used_memory = std::nan("");
    const double until = monotonic_seconds() + 120;
    while (monotonic_seconds() < until) {
        cpu = prom_value(prom_port, total_time);
        used_memory = prom_value(prom_port, used);
        if (cpu >= 3 && used_memory == used_memory) break;  // (NaN: no answer yet)
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    ASSERT_GE(cpu, 3) << test::read_text(d.path() + "/agent.log") << test::read_text(d.path() + "/prometheus.log")
                      << test::read_text(c.dir() + "/slurmd.log");
    const double total_memory = prom_value(prom_port, "max_over_time(cgroup_memory_total_bytes" + sel + "[120s])");
    const double cpus = prom_value(prom_port, "max_over_time(cgroup_cpus" + sel + "[120s])");
    // What Slurm set: 200 MiB, in the job's own memory cgroup (found wherever slurmd rooted it).
    EXPECT_EQ(total_memory, 200.0 * 1024 * 1024);
    const std::string limit_file =
        test::run({"/usr/bin/find", "/sys/fs/cgroup/memory", "-maxdepth", "4", "-name", "job_" + id}).out;
    EXPECT_EQ(test::read_text(limit_file.substr(0, limit_file.find('\n')) + "/memory.limit_in_bytes"), "209715200\n")
        << limit_file;
    EXPECT_GT(used_memory, 0) << prom_query(prom_port, "{jobid='" + id + "'}").dump();
    EXPECT_LT(used_memory, total_memory);
    // The cores Slurm gave it (scontrol's NumCPUs), from its cpuset.
    const std::string shown = c.slurm({"/usr/bin/scontrol", "show", "job", id, "-o"}).out;
    const std::size_t at = shown.find("NumCPUs=");
    ASSERT_NE(at, std::string::npos) << shown;
    EXPECT_EQ(cpus, std::atof(shown.c_str() + at + 8)) << shown;
    // Its CPU seconds grow with it, its cores' worth at most.
    const double since = monotonic_seconds();
    double later = cpu;
    EXPECT_TRUE(test::eventually(
        [&] {
            later = prom_value(prom_port, total_time);
            return later > cpu;
        },
        30, 0.5))
        << "the job's CPU seconds stayed at " << cpu;
    EXPECT_LT(later - cpu, (monotonic_seconds() - since + 2.0) * cpus + 2.0);
    EXPECT_EQ(c.slurm({"/usr/bin/scancel", id}).exit_code, 0);
}
