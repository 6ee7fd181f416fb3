// Which pod and container each device was allocated to, from the kubelet's pod-resources API (v1,
// `PodResourcesLister/List` on /var/lib/kubelet/pod-resources/kubelet.sock), as dcgm-exporter reads
// it: the NVIDIA device plugin's devices are GPU UUIDs ("GPU-...", "MIG-..." for a MIG device; with
// time-slicing a replica "GPU-...::N"). The answer is a protobuf decoded here by hand, strictly:
//
//   ListPodResourcesResponse { repeated PodResources pod_resources = 1; }
//   PodResources       { string name = 1; string namespace = 2; repeated ContainerResources containers = 3; }
//   ContainerResources { string name = 1; repeated ContainerDevices devices = 2; ... }
//   ContainerDevices   { string resource_name = 1; repeated string device_ids = 2; ... }
//
// Unknown fields are skipped (newer kubelets add some); a truncated or malformed message is an error,
// and names that are not Kubernetes names (DNS labels and subdomains, at most 253 bytes) are refused.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace baton::jobs {

struct PodDevice {
    std::string pod_namespace, pod, container;
    std::string resource;   // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
    std::string device_id;  // "GPU-..." or "MIG-...", a time-slicing replica's "::N" removed
};

// The devices of a ListPodResourcesResponse message; pods and containers without devices add none.
Result<std::vector<PodDevice>> parse_pod_resources(std::string_view message);

// Asks the kubelet (`socket`) with a deadline.
Result<std::vector<PodDevice>> list_pod_resources(const std::string& socket, double timeout_seconds);

}  // namespace baton::jobs
