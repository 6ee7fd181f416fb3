#include "core/allowed_cpus.hpp"

#include <sched.h>
#include <unistd.h>

namespace baton {

std::vector<unsigned> allowed_cpus() {
    std::vector<unsigned> out;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (unsigned c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) out.push_back(c);
    if (out.empty()) {
        const long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (unsigned c = 0; c < static_cast<unsigned>(n > 0 ? n : 1); ++c) out.push_back(c);
    }
    return out;
}

}  // namespace baton
