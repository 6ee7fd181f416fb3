// Whose job a process serves, from /proc/PID/cgroup alone: the layouts Slurm, the kubelet, the
// container runtimes and systemd give their cgroups, so no prolog, hook or mapping file is needed.
//
//   Slurm, cgroup v1     /slurm/uid_1000/job_1234/step_0/task_0       (slurm_NODE/ with several slurmd)
//   Slurm, cgroup v2     /system.slice/slurmstepd.scope/job_1234/step_batch/user/task_0
//                        (NODE_slurmstepd.scope with several slurmd)
//   Kubernetes, cgroupfs /kubepods/burstable/pod<UID>/<CONTAINER-ID>   (guaranteed: /kubepods/pod<UID>/...)
//   Kubernetes, systemd  /kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<UID_>.slice/
//                        cri-containerd-<ID>.scope   (crio-<ID>.scope, docker-<ID>.scope; the UID's
//                        dashes written as underscores)
//   Docker               /docker/<ID>, /system.slice/docker-<ID>.scope
//   Podman               /machine.slice/libpod-<ID>.scope[/container],
//   .../user@1000.service/user.slice/libpod-<ID>.scope,
//                        /libpod_parent/libpod-<ID>
//   CRI-O, containerd    /system.slice/crio-<ID>.scope, /system.slice/cri-containerd-<ID>.scope
//   LXC                  /lxc.payload.NAME
//   systemd service      /system.slice/jupyter.service (and transient units: run-r1234.scope)
//   user                 /user.slice/user-1000.slice/session-3.scope, .../user@1000.service/app.slice/...
//
// Ids are checked against what the layout allows (a Slurm job id is digits, a container id hex, a
// pod UID hex and dashes, a unit a systemd unit name): a path that does not fit is JobKind::none,
// never a label with arbitrary bytes in it. Pure functions, tested on hostile paths.
#pragma once

#include <string>
#include <string_view>

#include "sample/snapshot.hpp"

namespace baton::os {

// The job a cgroup path belongs to; kind none when it names none.
JobRef classify_cgroup(std::string_view path);

struct CgroupReading {
    std::string path;
    JobRef job;
};

// /proc/PID/cgroup: the path that names a Slurm job, a pod or a container, in whichever hierarchy
// holds it (on a hybrid host Slurm's cgroup v1 controllers do while the unified "0::" line shows
// slurmd's service), else the unified "0::" path, else the first line's; with its job.
CgroupReading read_cgroup_file(std::string_view text);

}  // namespace baton::os
