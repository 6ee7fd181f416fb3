// Whose job a process serves, from its cgroup path: the layouts of Slurm (v1 and v2), the kubelet
// (cgroupfs and systemd drivers, every QoS class, three runtimes), Docker, Podman, CRI-O,
// containerd, LXC, systemd services and user sessions, as those programs write them; and paths
// that only look like them.
#include <gtest/gtest.h>

#include <string>

#include "sample/linux/cgroup_owner.hpp"

using namespace baton;
using os::classify_cgroup;
using os::read_cgroup_file;

namespace {

const std::string kCid = "4f1c0d6e0b8a9f3c2e1d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d";

}  // namespace

TEST(CgroupOwner, SlurmUnderCgroupV1AndV2) {
    JobRef v1 = classify_cgroup("/slurm/uid_1000/job_1234/step_0/task_0");
    EXPECT_EQ(v1.kind, JobKind::slurm);
    EXPECT_EQ(v1.id, "1234");
    EXPECT_EQ(v1.step, "0");
    JobRef batch = classify_cgroup("/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0");
    EXPECT_EQ(batch.kind, JobKind::slurm);
    EXPECT_EQ(batch.id, "77");
    EXPECT_EQ(batch.step, "batch");
    // Several slurmd on one host name their roots after the node.
    EXPECT_EQ(classify_cgroup("/system.slice/node3_slurmstepd.scope/job_9/step_extern/slurm").step, "extern");
    EXPECT_EQ(classify_cgroup("/slurm_node3/uid_0/job_5/step_interactive/task_1").id, "5");
    // The job's own cgroup, before a step exists.
    JobRef bare = classify_cgroup("/slurm/uid_0/job_42");
    EXPECT_EQ(bare.kind, JobKind::slurm);
    EXPECT_EQ(bare.step, "");
    // job_ outside Slurm's tree, or not a number, is not a Slurm job.
    EXPECT_EQ(classify_cgroup("/user.slice/job_12").kind, JobKind::none);
    EXPECT_NE(classify_cgroup("/system.slice/myjob.service/job_12").kind, JobKind::slurm);
    EXPECT_EQ(classify_cgroup("/slurm/uid_0/job_12x/step_0").kind, JobKind::none);
    // Slurm's tree where a user can make cgroups (a delegated subtree) is not Slurm's.
    EXPECT_NE(classify_cgroup("/user.slice/user-1000.slice/user@1000.service/slurm/uid_0/job_7/step_0").kind,
              JobKind::slurm);
    EXPECT_NE(classify_cgroup("/user.slice/user-1000.slice/user@1000.service/app.slice/slurmstepd.scope/job_7").kind,
              JobKind::slurm);
    EXPECT_EQ(classify_cgroup("/slurm/uid_0/job_/step_0").kind, JobKind::none);
    EXPECT_EQ(classify_cgroup("/slurm/uid_0/job_123456789012345678901/step_0").kind, JobKind::none);
    // A step name with bytes a label could not carry is dropped, not the job.
    JobRef odd = classify_cgroup("/slurm/uid_0/job_3/step_\"x\\n");
    EXPECT_EQ(odd.id, "3");
    EXPECT_EQ(odd.step, "");
}

// A pod UID as the API writes it, and as the systemd driver writes it in a slice's name.
const std::string kPodUid = "6f2a3c1e-9b7d-4e0a-8c5f-1d2e3f4a5b6c";
const std::string kPodUidUnderscored = "6f2a3c1e_9b7d_4e0a_8c5f_1d2e3f4a5b6c";

TEST(CgroupOwner, KubernetesPodsUnderBothDrivers) {
    const std::string uid = kPodUid, under = kPodUidUnderscored;
    JobRef systemd = classify_cgroup("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + under +
                                     ".slice/cri-containerd-" + kCid + ".scope");
    EXPECT_EQ(systemd.kind, JobKind::pod);
    EXPECT_EQ(systemd.id, uid);  // the UID as the API writes it
    EXPECT_EQ(systemd.container_id, kCid);
    EXPECT_EQ(systemd.runtime, "containerd");
    JobRef guaranteed = classify_cgroup("/kubepods.slice/kubepods-pod" + under + ".slice/crio-" + kCid + ".scope");
    EXPECT_EQ(guaranteed.id, uid);
    EXPECT_EQ(guaranteed.runtime, "cri-o");
    JobRef cgroupfs = classify_cgroup("/kubepods/besteffort/pod" + uid + "/" + kCid);
    EXPECT_EQ(cgroupfs.kind, JobKind::pod);
    EXPECT_EQ(cgroupfs.id, uid);
    EXPECT_EQ(cgroupfs.container_id, kCid);
    EXPECT_EQ(cgroupfs.runtime, "");
    EXPECT_EQ(classify_cgroup("/kubepods/pod" + uid + "/" + kCid).id, uid);
    // kind's nested kubelet, and the pod's own cgroup (its pause container's parent).
    EXPECT_EQ(classify_cgroup("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
                              "kubelet-kubepods-besteffort-pod" +
                              under + ".slice/docker-" + kCid + ".scope")
                  .runtime,
              "docker");
    JobRef pod_only = classify_cgroup("/kubepods/burstable/pod" + uid);
    EXPECT_EQ(pod_only.kind, JobKind::pod);
    EXPECT_EQ(pod_only.container_id, "");
    // A pod directory that is not a UID, and "pod" outside kubepods.
    EXPECT_EQ(classify_cgroup("/kubepods/burstable/pod$(reboot)/" + kCid).kind, JobKind::none);
    EXPECT_EQ(classify_cgroup("/kubepods/burstable/podx").kind, JobKind::none);
    EXPECT_NE(classify_cgroup("/system.slice/pod" + uid + ".service").kind, JobKind::pod);
    EXPECT_NE(classify_cgroup("/user.slice/user-1000.slice/user@1000.service/kubepods/pod" + uid + "/" + kCid).kind,
              JobKind::pod);
}

// The agent's own pod in a private cgroup namespace (containerd on cgroup v2 gives it one): the other
// pods' paths climb out of the namespace first ("/../../.."), and still name their pod, under either
// driver; a user's subtree reached by a climb is no pod.
TEST(CgroupOwner, PodsSeenFromInsideAPrivateCgroupNamespace) {
    const std::string uid = kPodUid, under = kPodUidUnderscored;
    JobRef systemd = classify_cgroup("/../../../kubepods-besteffort.slice/kubepods-besteffort-pod" + under +
                                     ".slice/cri-containerd-" + kCid + ".scope");
    EXPECT_EQ(systemd.kind, JobKind::pod);
    EXPECT_EQ(systemd.id, uid);
    EXPECT_EQ(systemd.container_id, kCid);
    EXPECT_EQ(systemd.runtime, "containerd");
    JobRef same_qos =
        classify_cgroup("/../../kubepods-burstable-pod" + under + ".slice/cri-containerd-" + kCid + ".scope");
    EXPECT_EQ(same_qos.kind, JobKind::pod);
    EXPECT_EQ(same_qos.id, uid);
    JobRef cgroupfs = classify_cgroup("/../../../besteffort/pod" + uid + "/" + kCid);
    EXPECT_EQ(cgroupfs.kind, JobKind::pod);
    EXPECT_EQ(cgroupfs.id, uid);
    EXPECT_EQ(cgroupfs.container_id, kCid);
    EXPECT_EQ(classify_cgroup("/../../pod" + uid + "/" + kCid).id, uid) << "a guaranteed pod under cgroupfs";
    // Out of the namespace to the host's own units and users.
    EXPECT_EQ(classify_cgroup("/../../../../system.slice/docker-" + kCid + ".scope").kind, JobKind::container);
    EXPECT_EQ(classify_cgroup("/../../../../user.slice/user-1000.slice/session-3.scope").kind, JobKind::user);
    EXPECT_NE(classify_cgroup("/../../../../user.slice/user-1000.slice/user@1000.service/pod" + uid + "/" + kCid).kind,
              JobKind::pod);
    EXPECT_EQ(classify_cgroup("/../../..").kind, JobKind::none);
    EXPECT_EQ(classify_cgroup("/").kind, JobKind::none) << "the agent's own cgroup";
}

TEST(CgroupOwner, ContainersOfEachRuntime) {
    struct Case {
        std::string path, runtime;
    };
    for (const Case& c :
         {Case{"/docker/" + kCid, "docker"}, Case{"/system.slice/docker-" + kCid + ".scope", "docker"},
          Case{"/machine.slice/libpod-" + kCid + ".scope/container", "podman"},
          Case{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kCid + ".scope", "podman"},
          Case{"/libpod_parent/libpod-" + kCid, "podman"}, Case{"/system.slice/crio-" + kCid + ".scope", "cri-o"},
          Case{"/system.slice/cri-containerd-" + kCid + ".scope", "containerd"}}) {
        JobRef r = classify_cgroup(c.path);
        EXPECT_EQ(r.kind, JobKind::container) << c.path;
        EXPECT_EQ(r.id, kCid) << c.path;
        EXPECT_EQ(r.container_id, kCid) << c.path;
        EXPECT_EQ(r.runtime, c.runtime) << c.path;
    }
    JobRef lxc = classify_cgroup("/lxc.payload.build-box");
    EXPECT_EQ(lxc.kind, JobKind::container);
    EXPECT_EQ(lxc.id, "build-box");
    EXPECT_EQ(lxc.runtime, "lxc");
    // conmon's scope beside a container is not the container, nor a service (docs/fleet.md: it names no
    // job); short or non-hex ids are not ids.
    EXPECT_EQ(classify_cgroup("/machine.slice/libpod-conmon-" + kCid + ".scope").kind, JobKind::none);
    EXPECT_EQ(classify_cgroup("/system.slice/crio-conmon-" + kCid + ".scope").kind, JobKind::none);
    EXPECT_EQ(classify_cgroup("/docker/abc").kind, JobKind::none);
    EXPECT_EQ(classify_cgroup("/docker/" + std::string(64, 'z')).kind, JobKind::none);
    EXPECT_EQ(classify_cgroup("/docker/" + kCid + kCid).kind, JobKind::none);
}

TEST(CgroupOwner, ServicesAndUsers) {
    JobRef svc = classify_cgroup("/system.slice/jupyterhub.service");
    EXPECT_EQ(svc.kind, JobKind::service);
    EXPECT_EQ(svc.id, "jupyterhub.service");
    EXPECT_EQ(classify_cgroup("/system.slice/slurmd.service").id, "slurmd.service");
    EXPECT_EQ(classify_cgroup("/system.slice/system-getty.slice/getty@tty1.service").id, "getty@tty1.service");
    EXPECT_EQ(classify_cgroup("/system.slice/run-r3f2a.scope/sub").id, "run-r3f2a.scope");
    JobRef user = classify_cgroup("/user.slice/user-1000.slice/session-3.scope");
    EXPECT_EQ(user.kind, JobKind::user);
    EXPECT_EQ(user.id, "1000");
    EXPECT_EQ(classify_cgroup("/user.slice/user-1000.slice/user@1000.service/app.slice/app-code.scope").id, "1000");
    EXPECT_EQ(classify_cgroup("/user.slice/user-x.slice/session-3.scope").kind, JobKind::none);
    // A unit whose name has bytes systemd never writes.
    EXPECT_EQ(classify_cgroup("/system.slice/a b.service").kind, JobKind::none);
    EXPECT_EQ(classify_cgroup("/system.slice/caf\xc3\xa9.service").kind, JobKind::none);
    for (const char* none : {"", "/", "//", "/init.scope/..", "/system.slice", "/../../etc"})
        EXPECT_EQ(classify_cgroup(none).kind, JobKind::none) << none;
    EXPECT_EQ(classify_cgroup("/init.scope").kind, JobKind::none);  // systemd itself
}

TEST(CgroupOwner, HostilePathsCostLittleAndNameNothing) {
    EXPECT_EQ(classify_cgroup(std::string(5000, '/')).kind, JobKind::none);
    std::string deep;
    for (int i = 0; i < 200; ++i) deep += "/slurm";
    EXPECT_EQ(classify_cgroup(deep + "/job_1").kind, JobKind::none);
    EXPECT_EQ(classify_cgroup(std::string("/slurm/uid_0/job_1\0/step_0", 26)).kind, JobKind::none);
    EXPECT_EQ(classify_cgroup("/kubepods/pod" + std::string(100, 'a') + "/" + kCid).kind, JobKind::none);
}

TEST(CgroupOwner, TheFileNamesTheHierarchyThatHoldsTheJob) {
    // Hybrid host: Slurm's v1 controllers hold the job while the unified line shows slurmd's service.
    const auto hybrid = read_cgroup_file(
        "12:pids:/system.slice/slurmd.service\n"
        "4:memory:/slurm/uid_1000/job_88/step_0/task_0\n"
        "3:freezer:/slurm/uid_1000/job_88/step_0\n"
        "0::/system.slice/slurmd.service\n");
    EXPECT_EQ(hybrid.path, "/slurm/uid_1000/job_88/step_0/task_0");
    EXPECT_EQ(hybrid.job.kind, JobKind::slurm);
    EXPECT_EQ(hybrid.job.id, "88");
    // Pure v2.
    const auto v2 = read_cgroup_file("0::/system.slice/slurmstepd.scope/job_9/step_0/user/task_0\n");
    EXPECT_EQ(v2.job.id, "9");
    // Nothing names a job: the unified path, else the first line's.
    EXPECT_EQ(read_cgroup_file("12:cpu,cpuacct:/\n0::/\n").path, "/");
    EXPECT_EQ(read_cgroup_file("12:cpu,cpuacct:/x\n11:memory:/y\n").path, "/x");
    // A service on both: the unified line.
    const auto svc = read_cgroup_file("1:name=systemd:/system.slice/a.service\n0::/system.slice/b.service\n");
    EXPECT_EQ(svc.job.id, "b.service");
    EXPECT_EQ(read_cgroup_file("garbage").path, "");
    EXPECT_EQ(read_cgroup_file("garbage").job.kind, JobKind::none);
    EXPECT_EQ(read_cgroup_file("").path, "");
}
