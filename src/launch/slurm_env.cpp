#include "launch/slurm_env.hpp"

#include "core/text_parse.hpp"

namespace baton::launch {

namespace {

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// "01-03,7" -> 01 02 03 7.
Result<std::vector<std::string>> expand_ranges(std::string_view body, std::size_t max_hosts) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= body.size()) {
        std::size_t comma = body.find(',', start);
        if (comma == std::string_view::npos) comma = body.size();
        const std::string_view part = body.substr(start, comma - start);
        const std::size_t dash = part.find('-');
        const std::string_view lo = part.substr(0, dash);
        const std::string_view hi = dash == std::string_view::npos ? lo : part.substr(dash + 1);
        const std::optional<std::uint64_t> first = text::parse_digits<std::uint64_t>(lo);
        const std::optional<std::uint64_t> last = text::parse_digits<std::uint64_t>(hi);
        if (!first || !last || lo.size() > 18 || hi.size() > 18)
            return make_error("invalid range '" + std::string(part) + "'");
        const std::uint64_t a = *first, b = *last;
        if (b < a) return make_error("invalid range '" + std::string(part) + "' (it runs backwards)");
        if (b - a >= max_hosts || out.size() + (b - a) >= max_hosts)
            return make_error("more than " + std::to_string(max_hosts) + " hosts");
        for (unsigned long long n = a; n <= b; ++n) {
            std::string s = std::to_string(n);
            if (s.size() < lo.size()) s.insert(0, lo.size() - s.size(), '0');
            out.push_back(std::move(s));
        }
        start = comma + 1;
    }
    return out;
}

// One name with bracket groups: "a[1-2]b[1-2]".
Status expand_one(std::string_view item, std::vector<std::string>& out, std::size_t max_hosts) {
    std::vector<std::string> names{""};
    std::size_t i = 0;
    while (i < item.size()) {
        if (item[i] == ']') return make_error("unbalanced ']'");
        if (item[i] != '[') {
            const std::size_t next = item.find_first_of("[]", i);
            const std::string_view text = item.substr(i, next == std::string_view::npos ? item.size() - i : next - i);
            for (std::string& n : names) n.append(text);
            i += text.size();
            continue;
        }
        const std::size_t close = item.find(']', i);
        if (close == std::string_view::npos) return make_error("unbalanced '['");
        const std::string_view body = item.substr(i + 1, close - i - 1);
        if (body.find('[') != std::string_view::npos) return make_error("nested '['");
        Result<std::vector<std::string>> numbers = expand_ranges(body, max_hosts);
        if (!numbers.ok()) return numbers.error();
        if (names.size() * numbers->size() > max_hosts)
            return make_error("more than " + std::to_string(max_hosts) + " hosts");
        std::vector<std::string> grown;
        grown.reserve(names.size() * numbers->size());
        for (const std::string& n : names)
            for (const std::string& number : *numbers) grown.push_back(n + number);
        names = std::move(grown);
        i = close + 1;
    }
    if (out.size() + names.size() > max_hosts) return make_error("more than " + std::to_string(max_hosts) + " hosts");
    for (std::string& n : names)
        if (!n.empty()) out.push_back(std::move(n));
    return Ok{};
}

std::optional<int> small_int(const std::optional<std::string>& v) {
    if (!v || v->size() > 9) return std::nullopt;
    return text::parse_digits<int>(*v);
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view list, std::size_t max_hosts) {
    std::vector<std::string> out;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= list.size(); ++i) {
        const char c = i < list.size() ? list[i] : ',';
        if (c == '[') ++depth;
        if (c == ']') --depth;
        if (depth < 0 || depth > 1)
            return make_error("invalid host list '" + std::string(list) + "': unbalanced brackets");
        if (c != ',' || depth != 0) continue;
        const Status s = expand_one(list.substr(start, i - start), out, max_hosts);
        if (!s.ok()) return make_error("invalid host list '" + std::string(list) + "': " + s.error().message);
        start = i + 1;
    }
    if (depth != 0) return make_error("invalid host list '" + std::string(list) + "': unbalanced brackets");
    return out;
}

int slurm_master_port(std::string_view job_id) {
    const std::uint64_t id = text::take_u64(job_id).value_or(0);  // "123_4", an array task: its job's digits
    return 20000 + static_cast<int>(id % 20000);
}

Result<std::optional<SlurmPlacement>> slurm_placement(const EnvLookup& env) {
    const std::optional<std::string> job = env("SLURM_JOB_ID");
    std::optional<std::string> nodelist = env("SLURM_JOB_NODELIST");
    if (!nodelist) nodelist = env("SLURM_NODELIST");
    if (!job || !nodelist) return std::optional<SlurmPlacement>();
    if (!all_digits(*job)) return make_error("SLURM_JOB_ID=" + *job + " is not a job number");
    Result<std::vector<std::string>> hosts = expand_hostlist(*nodelist);
    if (!hosts.ok()) return make_error("SLURM_JOB_NODELIST: " + hosts.error().message);
    if (hosts->empty()) return make_error("SLURM_JOB_NODELIST names no host");
    SlurmPlacement p;
    p.job_id = *job;
    std::optional<std::string> nnodes_text = env("SLURM_JOB_NUM_NODES");
    if (!nnodes_text) nnodes_text = env("SLURM_NNODES");
    const std::optional<int> nnodes = nnodes_text ? small_int(nnodes_text) : static_cast<int>(hosts->size());
    if (!nnodes || *nnodes < 1)
        return make_error("SLURM_JOB_NUM_NODES=" + nnodes_text.value_or("") + " is not a count");
    if (static_cast<std::size_t>(*nnodes) != hosts->size())
        return make_error("SLURM_JOB_NUM_NODES=" + std::to_string(*nnodes) + " but SLURM_JOB_NODELIST names " +
                          std::to_string(hosts->size()) + " hosts");
    p.nnodes = *nnodes;
    const std::optional<std::string> node_text = env("SLURM_NODEID");
    const std::optional<int> node = node_text ? small_int(node_text) : 0;
    if (!node || *node >= p.nnodes)
        return make_error("SLURM_NODEID=" + node_text.value_or("") + " is not a node of the job's " +
                          std::to_string(p.nnodes));
    p.node_rank = *node;
    // One launcher per node: srun started as many tasks as nodes (or the batch step runs alone).
    if (const std::optional<std::string> ntasks_text = env("SLURM_NTASKS")) {
        const std::optional<int> ntasks = small_int(ntasks_text);
        if (!ntasks) return make_error("SLURM_NTASKS=" + *ntasks_text + " is not a count");
        if (*ntasks > p.nnodes)
            return make_error("Slurm started " + std::to_string(*ntasks) + " tasks on " + std::to_string(p.nnodes) +
                              " node(s): run one baton launch per node (srun --ntasks-per-node=1 baton launch ...), "
                              "it starts the ranks itself");
    }
    p.master_addr = hosts->front();
    p.master_port = slurm_master_port(*job);
    return std::optional<SlurmPlacement>(std::move(p));
}

}  // namespace baton::launch
