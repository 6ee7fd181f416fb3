#include "sample/jobs/slurm_names.hpp"

#include <algorithm>
#include <ctime>

#include "core/text_parse.hpp"

namespace baton::jobs {

namespace {

constexpr std::size_t kMaxValue = 256;  // a name longer than this is not a name: dropped
constexpr std::size_t kMaxIndices = 1024;

bool printable(std::string_view v) {
    return v.size() <= kMaxValue && std::all_of(v.begin(), v.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

void set_text(std::string& field, std::string_view v) {
    if (v == "(null)" || !printable(v)) return;
    field.assign(v);
}

bool is_job_id(std::string_view v) {
    return !v.empty() && v.size() <= 20 && text::parse_digits<std::uint64_t>(v).has_value();
}

// "alice(1000)" -> "alice"
std::string_view user_part(std::string_view v) {
    const std::size_t paren = v.find('(');
    return paren == std::string_view::npos ? v : v.substr(0, paren);
}

// The "KEY=value" pairs of scontrol's one-line form. A value runs to the next " Key=" (a key is
// letters, digits, '_', ':' and '/'), so a job name with spaces stays whole unless it itself looks
// like " Key=value".
struct Pair {
    std::string_view key, value;
};

bool key_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == ':' ||
           c == '/';
}

// Where the next " Key=" starts in `s` after position `from`, or s.size().
std::size_t next_key(std::string_view s, std::size_t from) {
    for (std::size_t i = s.find(' ', from); i != std::string_view::npos; i = s.find(' ', i + 1)) {
        std::size_t j = i + 1;
        while (j < s.size() && key_char(s[j])) ++j;
        if (j > i + 1 && j < s.size() && s[j] == '=') return i;
    }
    return s.size();
}

std::vector<Pair> pairs(std::string_view line) {
    std::vector<Pair> out;
    std::size_t at = 0;
    while (at < line.size() && line[at] == ' ') ++at;
    while (at < line.size() && out.size() < 4096) {
        const std::size_t eq = line.find('=', at);
        if (eq == std::string_view::npos) break;
        const std::size_t end = next_key(line, eq + 1);
        out.push_back({line.substr(at, eq - at), line.substr(eq + 1, end - eq - 1)});
        at = end;
        while (at < line.size() && line[at] == ' ') ++at;
    }
    return out;
}

// "2026-12-04T20:20:11" (the node's local time) -> Unix seconds.
std::optional<std::int64_t> parse_slurm_time(std::string_view v) {
    if (v.size() != 19 || v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' || v[16] != ':')
        return std::nullopt;
    auto field = [&](std::size_t at, std::size_t n) { return text::parse_digits<int>(v.substr(at, n)); };
    const auto y = field(0, 4), mo = field(5, 2), d = field(8, 2), h = field(11, 2), mi = field(14, 2),
               s = field(17, 2);
    if (!y || !mo || !d || !h || !mi || !s || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 ||
        *s > 60)
        return std::nullopt;
    std::tm tm{};
    tm.tm_year = *y - 1900;
    tm.tm_mon = *mo - 1;
    tm.tm_mday = *d;
    tm.tm_hour = *h;
    tm.tm_min = *mi;
    tm.tm_sec = *s;
    tm.tm_isdst = -1;
    const std::time_t t = std::mktime(&tm);
    if (t == static_cast<std::time_t>(-1)) return std::nullopt;
    return static_cast<std::int64_t>(t);
}

// "gpu:2(IDX:0-1)", "gpu:a100:2(IDX:0,2)", several GRES comma-separated around parentheses.
std::optional<std::vector<unsigned>> gres_gpu_indices(std::string_view v) {
    std::optional<std::vector<unsigned>> out;
    std::size_t at = 0;
    while (at < v.size()) {
        const std::size_t open = v.find("(IDX:", at);
        if (open == std::string_view::npos) break;
        const std::size_t close = v.find(')', open);
        if (close == std::string_view::npos) return std::nullopt;
        // The GRES this list belongs to starts after the previous ')' or ','.
        const std::size_t before = open == 0 ? std::string_view::npos : v.find_last_of(",)", open - 1);
        const std::size_t start = before == std::string_view::npos ? 0 : before + 1;
        if (v.substr(start, 4) == "gpu:") {
            auto idx = parse_slurm_index_list(v.substr(open + 5, close - open - 5));
            if (!idx) return std::nullopt;
            if (!out) out.emplace();
            out->insert(out->end(), idx->begin(), idx->end());
        }
        at = close + 1;
    }
    if (out) {
        std::sort(out->begin(), out->end());
        out->erase(std::unique(out->begin(), out->end()), out->end());
    }
    return out;
}

}  // namespace

std::optional<double> parse_slurm_duration(std::string_view s) {
    std::optional<unsigned> days;
    const std::size_t dash = s.find('-');
    if (dash != std::string_view::npos) {
        days = text::parse_digits<unsigned>(s.substr(0, dash));
        if (!days || *days > 100000) return std::nullopt;
        s.remove_prefix(dash + 1);
    }
    std::vector<unsigned> parts;
    while (true) {
        const std::size_t colon = s.find(':');
        const auto n = text::parse_digits<unsigned>(s.substr(0, colon));
        if (!n || *n > 1000000 || parts.size() == 3) return std::nullopt;
        parts.push_back(*n);
        if (colon == std::string_view::npos) break;
        s.remove_prefix(colon + 1);
    }
    double h = 0, m = 0, sec = 0;
    if (days) {
        // D-HH, D-HH:MM, D-HH:MM:SS
        h = parts[0];
        if (parts.size() > 1) m = parts[1];
        if (parts.size() > 2) sec = parts[2];
    } else if (parts.size() == 1) {
        m = parts[0];  // MM
    } else if (parts.size() == 2) {
        m = parts[0];  // MM:SS
        sec = parts[1];
    } else {
        h = parts[0];
        m = parts[1];
        sec = parts[2];
    }
    return days.value_or(0) * 86400.0 + h * 3600.0 + m * 60.0 + sec;
}

std::optional<std::vector<unsigned>> parse_slurm_index_list(std::string_view s) {
    std::vector<unsigned> out;
    if (s.empty()) return std::nullopt;
    while (!s.empty()) {
        const std::size_t comma = s.find(',');
        std::string_view part = s.substr(0, comma);
        s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
        const std::size_t dash = part.find('-');
        const auto lo = text::parse_digits<unsigned>(part.substr(0, dash));
        const auto hi = dash == std::string_view::npos ? lo : text::parse_digits<unsigned>(part.substr(dash + 1));
        if (!lo || !hi || *hi < *lo || *hi - *lo >= kMaxIndices || out.size() + (*hi - *lo) >= kMaxIndices)
            return std::nullopt;
        for (unsigned i = *lo; i <= *hi; ++i) out.push_back(i);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

SlurmNames parse_slurm_environ(std::string_view environ) {
    SlurmNames n;
    std::optional<std::uint64_t> mem_per_cpu_mb;
    while (!environ.empty()) {
        const std::size_t nul = environ.find('\0');
        const std::string_view var = environ.substr(0, nul);
        environ = nul == std::string_view::npos ? std::string_view() : environ.substr(nul + 1);
        if (var.substr(0, 6) != "SLURM_") continue;
        const std::size_t eq = var.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string_view key = var.substr(0, eq), v = var.substr(eq + 1);
        if (key == "SLURM_JOB_ID" || (key == "SLURM_JOBID" && n.job_id.empty())) {
            if (is_job_id(v)) n.job_id.assign(v);
        } else if (key == "SLURM_JOB_NAME") {
            set_text(n.name, v);
        } else if (key == "SLURM_JOB_USER") {
            set_text(n.user, v);
        } else if (key == "SLURM_JOB_ACCOUNT") {
            set_text(n.account, v);
        } else if (key == "SLURM_JOB_PARTITION") {
            set_text(n.partition, v);
        } else if (key == "SLURM_CPUS_ON_NODE") {
            if (auto c = text::parse_digits<unsigned>(v)) n.cpus = *c;
        } else if (key == "SLURM_MEM_PER_NODE") {
            if (auto m = text::parse_digits<std::uint64_t>(v); m && *m < (1ull << 40)) n.memory_bytes = *m << 20;
        } else if (key == "SLURM_MEM_PER_CPU") {
            if (auto m = text::parse_digits<std::uint64_t>(v); m && *m < (1ull << 40)) mem_per_cpu_mb = *m;
        } else if (key == "SLURM_JOB_GPUS" || (key == "SLURM_STEP_GPUS" && !n.gpus)) {
            if (auto g = parse_slurm_index_list(v)) n.gpus = std::move(g);
        }
    }
    if (!n.memory_bytes && mem_per_cpu_mb && n.cpus) n.memory_bytes = (*mem_per_cpu_mb * *n.cpus) << 20;
    if (n.job_id.empty()) return {};
    return n;
}

SlurmNames parse_scontrol_job(std::string_view text, std::string_view hostname) {
    SlurmNames n;
    // The first line that starts with JobId= (scontrol prints one per job; an array's tasks one each).
    std::string_view line;
    while (!text.empty()) {
        line = text::take_line(text);
        if (line.substr(0, 6) == "JobId=") break;
        line = {};
    }
    if (line.empty()) return n;
    // Detail entries ("Nodes=... CPU_IDs=... Mem=... GRES=...") repeat per node group.
    struct Detail {
        std::string_view nodes, cpu_ids, mem, gres;
    };
    std::vector<Detail> details;
    for (const Pair& p : pairs(line)) {
        if (p.key == "JobId") {
            if (is_job_id(p.value)) n.job_id.assign(p.value);
        } else if (p.key == "JobName") {
            set_text(n.name, p.value);
        } else if (p.key == "UserId") {
            set_text(n.user, user_part(p.value));
        } else if (p.key == "Account") {
            set_text(n.account, p.value);
        } else if (p.key == "Partition") {
            set_text(n.partition, p.value);
        } else if (p.key == "TimeLimit") {
            n.time_limit_seconds = parse_slurm_duration(p.value);
        } else if (p.key == "StartTime") {
            n.start_time_unix = parse_slurm_time(p.value);
        } else if (p.key == "Nodes" && details.size() < 1024) {
            details.push_back({p.value, {}, {}, {}});
        } else if (!details.empty() && p.key == "CPU_IDs") {
            details.back().cpu_ids = p.value;
        } else if (!details.empty() && p.key == "Mem") {
            details.back().mem = p.value;
        } else if (!details.empty() && p.key == "GRES") {
            details.back().gres = p.value;
        }
    }
    if (n.job_id.empty()) return {};
    const Detail* here = details.size() == 1 ? &details[0] : nullptr;
    for (const Detail& d : details)
        if (d.nodes == hostname) here = &d;
    if (here) {
        if (!here->cpu_ids.empty()) {
            const std::vector<unsigned> cpus = text::parse_cpu_list(here->cpu_ids);
            if (!cpus.empty()) n.cpus = static_cast<unsigned>(cpus.size());
        }
        // Mem=0: the job asked for no memory (no limit), not zero bytes.
        if (auto m = text::parse_digits<std::uint64_t>(here->mem); m && *m > 0 && *m < (1ull << 40))
            n.memory_bytes = *m << 20;
        n.gpus = gres_gpu_indices(here->gres);
        // No GPU GRES on this node: none allocated (known), unlike a list that did not parse.
        if (!n.gpus && here->gres.find("(IDX:") == std::string_view::npos) n.gpus.emplace();
    }
    return n;
}

}  // namespace baton::jobs
