#include "clean/process_facts.hpp"

#include <charconv>
#include <fcntl.h>
#include <unistd.h>

#include "core/files.hpp"
#include "core/text_parse.hpp"
#include "store/run_owner.hpp"

namespace baton::clean {

namespace {

// A /proc file's text (at most `max` bytes: a stat line, an environ), empty when the process is
// gone or the file is longer (an environ over 1 MiB is no process baton started).
std::string read_proc(const std::string& path, std::size_t max = 1 << 20) {
    return read_small_file(path, max).value_or("");
}

}  // namespace

std::optional<StatIds> parse_stat_ids(std::string_view line) {
    const std::size_t close = line.rfind(')');
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view rest = line.substr(close + 1);
    // Fields after the name: 3 state, 4 ppid, 5 pgrp, 6 session, ... 22 starttime.
    StatIds ids;
    int field = 2;
    std::size_t i = 0;
    while (i < rest.size() && field < 22) {
        while (i < rest.size() && rest[i] == ' ') ++i;
        std::size_t j = i;
        while (j < rest.size() && rest[j] != ' ' && rest[j] != '\n') ++j;
        ++field;
        const std::string_view word = rest.substr(i, j - i);
        if (field == 5 || field == 6 || field == 22) {
            const std::optional<std::uint64_t> number = text::parse_digits<std::uint64_t>(word);
            if (!number) return std::nullopt;
            const std::uint64_t v = *number;
            if (field == 5) ids.pgid = static_cast<std::uint32_t>(v);
            if (field == 6) ids.sid = static_cast<std::uint32_t>(v);
            if (field == 22) ids.start_ticks = v;
        }
        i = j;
    }
    if (field < 22) return std::nullopt;
    return ids;
}

std::map<std::uint32_t, ProcessFacts> gather_process_facts(const Snapshot& snap, const std::string& proc_root) {
    std::map<std::uint32_t, ProcessFacts> out;
    std::map<std::pair<std::int64_t, std::uint64_t>, bool> owners;  // (pid, start) -> alive, asked once each
    for (const ProcessInfo& p : snap.processes) {
        const std::string dir = proc_root + "/" + std::to_string(p.pid);
        const std::optional<StatIds> ids = parse_stat_ids(read_proc(dir + "/stat", 4096));
        if (!ids) continue;  // gone since the snapshot
        ProcessFacts f;
        f.pgid = ids->pgid;
        f.sid = ids->sid;
        f.start_ticks = ids->start_ticks;
        const std::string env = read_proc(dir + "/environ");  // empty for another user's, unless root
        std::size_t at = 0;
        while (at < env.size()) {
            std::size_t end = env.find('\0', at);
            if (end == std::string::npos) end = env.size();
            const std::string_view kv(env.data() + at, end - at);
            const std::string owner_prefix = std::string(store::kOwnerVariable) + "=";
            if (kv.rfind(owner_prefix, 0) == 0) {
                if (const std::optional<store::RunOwner> o = store::parse_owner_token(kv.substr(owner_prefix.size()))) {
                    f.owner_pid = o->pid;
                    f.owner_start_ticks = o->start_ticks.value_or(0);
                    const std::pair<std::int64_t, std::uint64_t> key{o->pid, o->start_ticks.value_or(0)};
                    auto known = owners.find(key);
                    if (known == owners.end()) known = owners.emplace(key, store::owner_alive(*o)).first;
                    f.owner_alive = known->second;
                }
            } else if (kv.rfind("TORCHELASTIC_RUN_ID=", 0) == 0) {
                f.launched_rank = true;
            }
            at = end + 1;
        }
        out[p.pid] = f;
    }
    return out;
}

}  // namespace baton::clean
