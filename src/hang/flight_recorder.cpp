#include "hang/flight_recorder.hpp"

#include <algorithm>
#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "hang/frame_roles.hpp"

namespace baton::hang {

namespace {

// Each setting under its names, newest first (PyTorch reads the first one set).
struct FrVariable {
    const char* names[2];
};
constexpr FrVariable kBuffer{{"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"}};
constexpr FrVariable kDumpOnTimeout{{"TORCH_FR_DUMP_ON_TIMEOUT", "TORCH_NCCL_DUMP_ON_TIMEOUT"}};
constexpr FrVariable kDumpFile{{"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"}};
constexpr FrVariable kPipeFile{{"TORCH_FR_DEBUG_INFO_PIPE_FILE", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE"}};

// 2000 entries, PyTorch's own default where it turns the recorder on by itself (2.6+): a few
// minutes of collectives at most, recorded in a ring, a few hundred bytes each.
constexpr const char* kBufferEntries = "2000";

std::optional<std::string> user_value(const FrVariable& v, const EnvGet& inherited) {
    for (const char* n : v.names)
        if (std::optional<std::string> x = inherited(n)) return x;
    return std::nullopt;
}

std::string text_of(const nlohmann::json& j) {
    if (j.is_string()) return j.get<std::string>();
    if (j.is_null()) return "";
    return j.dump();
}

std::int64_t int_of(const nlohmann::json& j) {
    if (j.is_number_unsigned())
        return static_cast<std::int64_t>(std::min<std::uint64_t>(j.get<std::uint64_t>(), INT64_MAX));
    if (j.is_number_integer()) return j.get<std::int64_t>();
    if (j.is_number_float()) {  // in range, or 0 (NaN, infinities and what no int64 holds: found by fuzz)
        const double d = j.get<double>();
        return d >= -9.2e18 && d <= 9.2e18 ? static_cast<std::int64_t>(d) : 0;
    }
    return 0;
}

// "[0, 1, 2, 3]" (a string in the dump) or a list: the ranks.
std::vector<int> ranks_of(const nlohmann::json& j) {
    std::vector<int> out;
    if (j.is_array()) {
        for (const nlohmann::json& r : j)
            if (r.is_number_integer() && int_of(r) >= 0 && int_of(r) <= 1'000'000'000)
                out.push_back(static_cast<int>(int_of(r)));
        return out;
    }
    const std::string s = text_of(j);
    long long n = -1;
    for (char c : s) {
        if (c >= '0' && c <= '9') {
            n = (n < 0 ? 0 : n) * 10 + (c - '0');
            if (n > 1'000'000'000) return {};  // not a rank
        } else if (n >= 0) {
            out.push_back(static_cast<int>(n));
            n = -1;
        }
    }
    if (n >= 0) out.push_back(static_cast<int>(n));
    return out;
}

std::vector<PyFrame> frames_of(const nlohmann::json& j) {
    std::vector<PyFrame> out;
    if (!j.is_array()) return out;
    for (const nlohmann::json& f : j) {
        if (!f.is_object()) continue;
        PyFrame p;
        p.file = f.contains("filename") ? text_of(f["filename"]) : "";
        p.function = f.contains("name") ? text_of(f["name"]) : "";
        if (f.contains("line") && f["line"].is_number_integer() && int_of(f["line"]) >= 0 &&
            int_of(f["line"]) <= UINT32_MAX)
            p.line = static_cast<unsigned>(int_of(f["line"]));
        out.push_back(std::move(p));
    }
    return out;
}

// " at train.py:61", from the user's frame of the call.
std::string at_text(const FrEntry& e) {
    const PyFrame* f = user_frame(e.frames);
    if (!f) return "";
    return " at " + f->file + ":" + (f->line ? std::to_string(*f->line) : "?");
}

// One rank's place in one process group.
struct RankInGroup {
    int rank = 0;
    std::int64_t last_seq = 0;
    const FrEntry* last = nullptr;  // the newest entry of its newest collective
};

std::string group_text(const std::string& pg, const std::string& desc) {
    return "process group " + pg + (desc.empty() || desc == "undefined" ? "" : " (" + desc + ")");
}

// The judgement of one process group; nullopt when everything in it completed.
std::optional<FrVerdict> judge_group(const std::string& pg, const std::vector<RankInGroup>& ranks,
                                     const std::vector<const FrDump*>& dumps, const std::vector<int>& undumped,
                                     bool multi_node) {
    std::int64_t max_seq = 0;
    bool pending = false;
    for (const RankInGroup& r : ranks) {
        max_seq = std::max(max_seq, r.last_seq);
        pending = pending || (r.last && r.last->state != "completed");
    }
    std::vector<int> behind;
    std::int64_t furthest = max_seq;
    for (const RankInGroup& r : ranks) furthest = std::min(furthest, r.last_seq);
    if (!pending && furthest == max_seq) return std::nullopt;
    FrVerdict v;
    v.pg = pg;
    std::string desc;
    for (const RankInGroup& r : ranks)
        if (r.last) desc = r.last->pg_desc;
    if (furthest < max_seq) {
        // Some ranks never called the collective the others did: those furthest behind are named.
        std::vector<int> ahead;
        const FrEntry* missed = nullptr;
        std::map<std::string, std::vector<int>> states;  // of the missed collective, on the ranks that called it
        for (const RankInGroup& r : ranks) {
            if (r.last_seq == furthest) {
                behind.push_back(r.rank);
                continue;
            }
            ahead.push_back(r.rank);
            for (const FrDump* d : dumps) {
                if (d->rank != r.rank) continue;
                for (const FrEntry& e : d->entries)
                    if (e.pg == pg && !e.p2p && e.seq == furthest + 1) {
                        if (!missed) missed = &e;
                        states[e.state].push_back(r.rank);
                        break;
                    }
            }
        }
        v.desync = true;
        v.culprits = behind;
        v.seq = furthest + 1;
        FrEntry shown;
        if (missed) shown = *missed;
        shown.pg = pg;
        shown.pg_desc = desc;
        shown.seq = furthest + 1;
        if (shown.op.empty()) shown.op = "collective";
        v.op = shown.op;
        std::string state_text;
        for (const auto& [state, rs] : states)
            state_text += (state_text.empty() ? "" : ", ") + state + (states.size() > 1 ? " on " + ranks_text(rs) : "");
        v.summary = "Flight Recorder: " + ranks_text(behind) + " never called " + fr_collective_text(shown) + ": " +
                    ranks_text(ahead) + " called it" + (missed ? at_text(*missed) : "") +
                    (missed ? " (sizes " + missed->sizes + (missed->dtypes.empty() ? "" : ", " + missed->dtypes) +
                                  (state_text.empty() ? "" : "; " + state_text) + ")"
                            : "");
        const RankInGroup* laggard = nullptr;
        for (const RankInGroup& r : ranks)
            if (r.rank == behind.front()) laggard = &r;
        if (laggard && laggard->last)
            v.summary += "; " + ranks_text(behind) + (behind.size() == 1 ? "'s" : "'") + " last there is " +
                         fr_collective_text(*laggard->last) + at_text(*laggard->last) + " (" + laggard->last->state +
                         ")";
        else
            v.summary +=
                "; " + ranks_text(behind) + (behind.size() == 1 ? " has" : " have") + " called no collective in it";
        return v;
    }
    // Every rank is at the same collective: different ops, sizes or dtypes are a desync too.
    v.seq = max_seq;
    for (const auto& [what, field] :
         {std::pair{"different collectives", &FrEntry::op}, std::pair{"different sizes", &FrEntry::sizes},
          std::pair{"different dtypes", &FrEntry::dtypes}}) {
        std::map<std::string, std::vector<int>> by;
        std::map<std::string, const FrEntry*> sample;
        for (const RankInGroup& r : ranks) {
            if (!r.last) continue;
            by[r.last->*field].push_back(r.rank);
            sample.emplace(r.last->*field, r.last);
        }
        if (by.size() < 2) continue;
        std::vector<std::pair<std::string, std::vector<int>>> groups(by.begin(), by.end());
        std::stable_sort(groups.begin(), groups.end(),
                         [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
        v.desync = true;
        for (std::size_t i = 1; i < groups.size(); ++i)
            v.culprits.insert(v.culprits.end(), groups[i].second.begin(), groups[i].second.end());
        std::sort(v.culprits.begin(), v.culprits.end());
        const FrEntry& ref = *sample[groups.front().first];
        v.op = ref.op;
        std::string parts;
        for (const auto& [value, rs] : groups) {
            const FrEntry& e = *sample[value];
            parts += (parts.empty() ? "" : "; ") + ranks_text(rs) + " " +
                     (field == &FrEntry::op      ? e.op
                      : field == &FrEntry::sizes ? e.sizes
                                                 : e.dtypes) +
                     at_text(e);
        }
        v.summary =
            "Flight Recorder: the ranks called " +
            (field == &FrEntry::op ? "#" + std::to_string(max_seq) + " of " + group_text(pg, desc) + " as " + what
                                   : fr_collective_text(ref) + " with " + what) +
            ": " + parts;
        return v;
    }
    // The same collective everywhere, and it does not complete.
    const FrEntry* ref = nullptr;
    std::vector<int> all, not_started;
    for (const RankInGroup& r : ranks) {
        all.push_back(r.rank);
        if (r.last && !ref) ref = r.last;
        if (r.last && r.last->state == "scheduled") not_started.push_back(r.rank);
    }
    if (!ref) return std::nullopt;
    v.op = ref->op;
    const std::string what = fr_collective_text(*ref) + at_text(*ref);
    if (!not_started.empty() && not_started.size() < all.size()) {
        v.culprits = not_started;
        v.summary = "Flight Recorder: every rank called " + what + "; " + ranks_text(not_started) +
                    (not_started.size() == 1 ? " has" : " have") +
                    " not started it (its GPU is still busy with earlier work), the others wait in it";
        return v;
    }
    if (!undumped.empty()) {
        // Members that gave no dump (gone, or on another node) may be the ones missing from it.
        v.culprits = undumped;
        v.summary = "Flight Recorder: " + ranks_text(all) + (all.size() == 1 ? " is" : " are") + " in " + what + " (" +
                    ref->state + ") and it does not complete; " + ranks_text(undumped) +
                    " of the group gave no dump (" + (undumped.size() == 1 ? "it is" : "they are") +
                    " the ones it waits for, unless the network is down)";
        return v;
    }
    v.summary = "Flight Recorder: " + std::string(all.size() == 1 ? "the rank is" : "every rank is") + " in " + what +
                " (" + ref->state + ") and it does not complete: " +
                (multi_node ? "no rank of this node is missing from it; the ranks of other nodes are not in these "
                              "dumps (their launchers have theirs)"
                            : "no rank is missing from it (the network or NCCL: --nccl debug)");
    return v;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> flight_recorder_environment(const std::string& dir,
                                                                             const EnvGet& inherited) {
    std::vector<std::pair<std::string, std::string>> env;
    auto both = [&](const FrVariable& v, const std::string& value) {
        if (user_value(v, inherited)) return;
        for (const char* n : v.names) env.emplace_back(n, value);
    };
    both(kBuffer, kBufferEntries);
    // Also what makes the NCCL heartbeat thread look at the pipe every second (else every few minutes).
    both(kDumpOnTimeout, "1");
    both(kDumpFile, dir + "/rank_");
    both(kPipeFile, dir + "/pipe_");
    return env;
}

FlightRecorderPaths flight_recorder_paths(const std::string& dir, const EnvGet& inherited) {
    FlightRecorderPaths p;
    if (std::optional<std::string> b = user_value(kBuffer, inherited)) {
        const std::string v = *b;
        if (v.empty() || v.find_first_not_of("0") == std::string::npos || v[0] == '-') {
            p.off_reason = std::string(inherited(kBuffer.names[0]) ? kBuffer.names[0] : kBuffer.names[1]) + "=" + v;
            return p;
        }
    }
    p.enabled = true;
    p.dump_prefix = user_value(kDumpFile, inherited).value_or(dir + "/rank_");
    p.pipe_prefix = user_value(kPipeFile, inherited).value_or(dir + "/pipe_");
    return p;
}

Result<FrDump> parse_flight_recorder_json(std::string_view json, int rank) {
    const nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return make_error("not JSON");
    if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array())
        return make_error("not a Flight Recorder dump (no list of entries)");
    FrDump d;
    d.rank = rank;
    if (j.contains("version")) d.version = text_of(j["version"]);
    if (j.contains("pg_config") && j["pg_config"].is_object())
        for (const auto& [name, cfg] : j["pg_config"].items()) {
            if (!cfg.is_object()) continue;
            const std::string pg = cfg.contains("name") ? text_of(cfg["name"]) : name;
            if (cfg.contains("ranks")) d.pg_ranks[pg] = ranks_of(cfg["ranks"]);
            if (cfg.contains("desc")) d.pg_desc[pg] = text_of(cfg["desc"]);
        }
    for (const nlohmann::json& x : j["entries"]) {
        if (!x.is_object()) continue;
        FrEntry e;
        if (x.contains("process_group")) {
            const nlohmann::json& g = x["process_group"];
            if (g.is_array() && !g.empty()) {
                e.pg = text_of(g[0]);
                if (g.size() > 1) e.pg_desc = text_of(g[1]);
            } else {
                e.pg = text_of(g);
            }
        } else if (x.contains("pg_id")) {
            e.pg = text_of(x["pg_id"]);
        }
        if (e.pg_desc.empty())
            if (auto it = d.pg_desc.find(e.pg); it != d.pg_desc.end()) e.pg_desc = it->second;
        e.p2p = x.contains("is_p2p") && x["is_p2p"].is_boolean() && x["is_p2p"].get<bool>();
        e.seq = int_of(x.value(e.p2p ? "p2p_seq_id" : "collective_seq_id", nlohmann::json()));
        e.op = x.contains("profiling_name") ? text_of(x["profiling_name"]) : "";
        if (std::size_t colon = e.op.find(':'); colon != std::string::npos) e.op = e.op.substr(colon + 1);
        if (x.contains("input_sizes")) e.sizes = x["input_sizes"].dump();
        if (x.contains("input_dtypes") && x["input_dtypes"].is_array())
            for (const nlohmann::json& t : x["input_dtypes"]) e.dtypes += (e.dtypes.empty() ? "" : ", ") + text_of(t);
        e.state = x.contains("state") ? text_of(x["state"]) : "";
        e.created_unix_ms = int_of(x.value("time_created_ns", nlohmann::json())) / 1'000'000;
        if (x.contains("frames")) e.frames = frames_of(x["frames"]);
        d.entries.push_back(std::move(e));
    }
    return d;
}

std::optional<FrEntry> oldest_pending(const FrDump& d) {
    for (const FrEntry& e : d.entries)
        if (!e.p2p && e.state != "completed") return e;
    return std::nullopt;
}

std::string fr_collective_text(const FrEntry& e) {
    return (e.op.empty() ? std::string("collective") : e.op) + " #" + std::to_string(e.seq) + " of " +
           group_text(e.pg, e.pg_desc);
}

std::optional<FrVerdict> judge_flight_recorder(const std::vector<FrDump>& dumps, const std::vector<int>& local_ranks,
                                               bool multi_node) {
    const std::set<int> local(local_ranks.begin(), local_ranks.end());
    std::set<std::string> groups;
    for (const FrDump& d : dumps)
        for (const FrEntry& e : d.entries)
            if (!e.p2p) groups.insert(e.pg);
    std::vector<FrVerdict> found;
    for (const std::string& pg : groups) {
        // Its members: as any dump's configuration lists them, else the ranks that called something in it.
        std::set<int> members;
        for (const FrDump& d : dumps)
            if (auto it = d.pg_ranks.find(pg); it != d.pg_ranks.end())
                members.insert(it->second.begin(), it->second.end());
        std::vector<RankInGroup> ranks;
        std::vector<const FrDump*> in;
        for (const FrDump& d : dumps) {
            RankInGroup r;
            r.rank = d.rank;
            bool called = false;
            for (const FrEntry& e : d.entries) {
                if (e.pg != pg || e.p2p) continue;
                called = true;
                if (e.seq >= r.last_seq) {
                    r.last_seq = e.seq;
                    r.last = &e;
                }
            }
            if (!called && !members.count(d.rank)) continue;
            ranks.push_back(r);
            in.push_back(&d);
        }
        std::sort(ranks.begin(), ranks.end(),
                  [](const RankInGroup& a, const RankInGroup& b) { return a.rank < b.rank; });
        // Members with no dump here: of this node only (another node's ranks are not expected).
        std::vector<int> undumped;
        std::set<int> dumped;
        for (const RankInGroup& r : ranks) dumped.insert(r.rank);
        for (int m : members)
            if (!dumped.count(m) && (local_ranks.empty() || local.count(m))) undumped.push_back(m);
        if (std::optional<FrVerdict> v = judge_group(pg, ranks, in, undumped, multi_node))
            found.push_back(std::move(*v));
    }
    if (found.empty()) return std::nullopt;
    // A desync says the most; process groups in their names' order ("0" is the default group).
    auto best = std::find_if(found.begin(), found.end(), [](const FrVerdict& v) { return v.desync; });
    return best != found.end() ? *best : found.front();
}

}  // namespace baton::hang
