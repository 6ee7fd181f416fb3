// What Slurm's commands print, as `baton queue`, `show`, `wait` and `submit --slurm` read it (a
// broken or hostile squeue on PATH may print anything): every parsed job has a positive id and a
// lower-case state, an sbatch answer is a positive id or an error, an exit code is a shell's
// (0 to 255), scontrol's fields have non-empty keys, and the remembered-jobs file gives back only
// well-formed entries.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "queue/slurm.hpp"
#include "queue/slurm_client.hpp"

namespace {

void check(const baton::queue::SlurmJob& j) {
    if (j.id <= 0) std::abort();
    for (char c : j.state)
        if (std::isupper(static_cast<unsigned char>(c)) || c == ' ') std::abort();
    if (j.start_ms && baton::queue::slurm_state_open(j.state) && j.state == "pending") std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace baton::queue;
    const std::string text(reinterpret_cast<const char*>(data), size);
    for (const SlurmJob& j : parse_squeue(text)) check(j);
    for (const SlurmJob& j : parse_sacct(text)) check(j);
    baton::Result<std::int64_t> id = parse_sbatch_id(text);
    if (id.ok() && *id <= 0) std::abort();
    if (std::optional<std::int64_t> s = slurm_job_id(text); s && *s <= 0) std::abort();
    (void)parse_slurm_time(text);
    if (std::optional<int> code = parse_slurm_exit_code(text); code && (*code < 0 || *code > 255)) std::abort();
    for (const auto& [key, value] : parse_scontrol_fields(text))
        if (key.empty() || key.find('=') != std::string::npos) std::abort();
    return 0;
}
