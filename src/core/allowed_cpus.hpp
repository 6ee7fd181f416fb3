// The CPUs this process may run on (its affinity: a container's cpuset, taskset, a Slurm step),
// in ascending order; when the kernel will not say, every online CPU. What the queue hands out,
// what launch divides among ranks, what the memory bench spreads its threads over.
#pragma once

#include <vector>

namespace baton {

std::vector<unsigned> allowed_cpus();

}  // namespace baton
