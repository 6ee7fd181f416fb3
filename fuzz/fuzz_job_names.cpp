// The names a node gives a job, from outside baton's control: a task's SLURM_* environment (any
// user's process), `scontrol show job`'s line, and the kubelet's protobuf answer. The first byte
// chooses the parser. Whatever the input, the names that come out are printable (they become
// Prometheus labels and findings' subjects) and the index lists stay bounded.
#include <cstdint>
#include <string>
#include <string_view>

#include "sample/jobs/pod_resources.hpp"
#include "sample/jobs/slurm_names.hpp"

using namespace baton::jobs;

namespace {

void printable(const std::string& s) {
    for (unsigned char c : s)
        if (c < ' ' || c >= 0x7f) __builtin_trap();
}

void check(const SlurmNames& n) {
    for (const std::string* s : {&n.job_id, &n.name, &n.user, &n.account, &n.partition}) printable(*s);
    if (n.gpus && n.gpus->size() > 1024) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 5) {
        case 0:
            check(parse_slurm_environ(text));
            break;
        case 1: {
            // The node's name is the text's first line; the rest is scontrol's answer.
            const std::size_t nl = text.find('\n');
            const std::string_view host = nl == std::string_view::npos ? std::string_view{} : text.substr(0, nl);
            check(parse_scontrol_job(nl == std::string_view::npos ? text : text.substr(nl + 1), host));
            break;
        }
        case 2: {
            const auto d = parse_slurm_duration(text);
            if (d && !(*d >= 0)) __builtin_trap();
            break;
        }
        case 3: {
            const auto l = parse_slurm_index_list(text);
            if (l && l->size() > 1024) __builtin_trap();
            break;
        }
        case 4: {
            const auto r = parse_pod_resources(text);
            if (r)
                for (const PodDevice& d : *r) {
                    for (const std::string* s : {&d.pod_namespace, &d.pod, &d.container, &d.resource, &d.device_id}) {
                        printable(*s);
                        if (s->size() > 256) __builtin_trap();
                    }
                    if (d.device_id.find("::") != std::string::npos) __builtin_trap();
                }
            break;
        }
    }
    return 0;
}
