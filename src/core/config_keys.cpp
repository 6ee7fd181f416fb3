#include "core/config_keys.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <sstream>
#include <variant>

#include "core/clock.hpp"
#include "core/text_parse.hpp"

namespace baton {

namespace {

// Where a key's value lives in Config.
using Ref = std::variant<std::string& (*)(Config&), bool& (*)(Config&), int& (*)(Config&), double& (*)(Config&),
                         std::size_t& (*)(Config&), std::vector<std::string>& (*)(Config&)>;

enum class Rule {
    text,              // any string
    nonempty,          // a string, not empty
    boolean,           //
    integer,           // an integer node in [lo, hi]
    number,            // an integer or a float in [lo, hi]
    share,             // a number above 0, at most 1
    duration,          // a duration string ("30d") in [lo, hi] seconds
    duration_or_secs,  // the same, or a number of seconds
    choice,            // one of `choices`, stored as the string
    custom,            // `set` and `show` below
};

// A custom key's parser: the error's tail ("must be ...") when `v` is refused.
using Set = std::optional<std::string> (*)(const ConfigValue& v, Config& c);
using Show = std::string (*)(const Config& c);

struct Row {
    const char* section;
    const char* name;
    Rule rule;
    Ref ref;
    double lo = 0, hi = 0;
    std::string must;  // the error's tail: "must be a number from 0 to 100"
    const char* help;
    std::vector<std::string> choices = {};
    Set set = nullptr;
    Show show = nullptr;
    const char* default_text = nullptr;  // for the docs, where the default is not a value ("" meaning something)
};

// A number as the docs and messages print it: 0.1, 5, 1073741824 (never 1e+09).
std::string key_number_text(double v) {
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

// A range's end in a rule's text, as the messages always printed them: 0.1, 100, 1e+12.
std::string range_text(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

std::string toml_quoted(const std::string& s) {
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"' || ch == '\\') out.push_back('\\');
        out.push_back(ch);
    }
    return out + "\"";
}

// 2592000 -> "30d", 600 -> "10m", 0.5 -> "500ms": the largest unit that divides it.
std::string duration_text(double seconds) {
    const std::pair<double, const char*> units[] = {{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};
    for (const auto& [size, unit] : units)
        if (seconds >= size && std::fmod(seconds, size) == 0)
            return toml_quoted(key_number_text(seconds / size) + unit);
    return toml_quoted(key_number_text(seconds * 1000) + "ms");
}

std::string list_text(const std::vector<std::string>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + toml_quoted(items[i]);
    return out + "]";
}

std::optional<double> value_number(const ConfigValue& v) {
    if (v.kind == ConfigValue::Kind::integer) return static_cast<double>(v.integer);
    if (v.kind == ConfigValue::Kind::floating) return v.floating;
    return std::nullopt;
}

#define BATON_REF(type, member) static_cast<type& (*)(Config&)>([](Config& c) -> type& { return c.member; })
#define BATON_TEXT(member) BATON_REF(std::string, member)

// [serve] allowed_hosts: host names as a browser sends them (letters, digits, '-', '.', or "[v6]"), lowercased.
std::optional<std::string> set_allowed_hosts(const ConfigValue& v, Config& c) {
    if (v.kind != ConfigValue::Kind::array) return "must be a list of host names";
    std::vector<std::string> hosts;
    for (const ConfigValue& item : v.items) {
        bool ok = item.kind == ConfigValue::Kind::string && !item.text.empty() && item.text.size() <= 253;
        for (char ch : ok ? item.text : std::string())
            ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' || ch == '[' ||
                        ch == ']' || ch == ':');
        if (!ok) return "must be a list of host names, e.g. [\"gpu-01\", \"gpu-01.lan\"]";
        std::string lower;
        for (char ch : item.text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
        hosts.push_back(lower);
    }
    c.serve.allowed_hosts = std::move(hosts);
    return std::nullopt;
}

std::string show_allowed_hosts(const Config& c) {
    return list_text(c.serve.allowed_hosts);
}

// A list of names, or one string of them comma-separated ([top] columns, [top] hosts): kept as one
// comma-separated string, which its command checks name by name. `forbidden`: characters an item of
// the list may not hold. nullopt: `v` is neither.
std::optional<std::string> comma_list_of(const ConfigValue& v, const char* forbidden) {
    if (v.kind == ConfigValue::Kind::string) return v.text;
    if (v.kind != ConfigValue::Kind::array) return std::nullopt;
    std::string joined;
    for (const ConfigValue& item : v.items) {
        if (item.kind != ConfigValue::Kind::string || item.text.empty() ||
            item.text.find_first_of(forbidden) != std::string::npos)
            return std::nullopt;
        joined += (joined.empty() ? "" : ",") + item.text;
    }
    return joined;
}

// The same string shown as a TOML list.
std::string comma_list_text(const std::string& joined) {
    std::vector<std::string> names;
    std::size_t start = 0;
    while (!joined.empty()) {
        const std::size_t comma = joined.find(',', start);
        names.push_back(joined.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return list_text(names);
}

// [top] columns: baton top checks the names.
std::optional<std::string> set_columns(const ConfigValue& v, Config& c) {
    const std::optional<std::string> columns = comma_list_of(v, ", ");
    if (!columns) return v.kind == ConfigValue::Kind::array ? "must be a list of column names" : "must be a string";
    if (columns->empty()) return "must name at least one column";
    c.top.columns = *columns;
    return std::nullopt;
}

std::string show_columns(const Config& c) {
    return comma_list_text(c.top.columns);
}

// [top] hosts: HOST[:PORT] each; baton top checks them.
std::optional<std::string> set_top_hosts(const ConfigValue& v, Config& c) {
    const std::optional<std::string> hosts = comma_list_of(v, ",");
    if (!hosts) return "must be a list of hosts, e.g. [\"gpu1\", \"gpu2:9900\"]";
    c.top.hosts = *hosts;
    return std::nullopt;
}

std::string show_top_hosts(const Config& c) {
    return comma_list_text(c.top.hosts);
}

// [top] host_token_files: ["HOST[:PORT]=PATH", ...], each host named once.
std::optional<std::string> set_host_token_files(const ConfigValue& v, Config& c) {
    const char* must = "must be a list of \"HOST[:PORT]=PATH\", e.g. [\"gpu3=/etc/baton/gpu3.token\"]";
    if (v.kind != ConfigValue::Kind::array) return must;
    std::vector<std::string> pairs;
    for (const ConfigValue& item : v.items) {
        const std::size_t eq = item.kind == ConfigValue::Kind::string ? item.text.find('=') : std::string::npos;
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.text.size()) return must;
        for (const std::string& p : pairs)
            if (p.compare(0, p.find('=') + 1, item.text, 0, eq + 1) == 0)
                return "names host '" + item.text.substr(0, eq) + "' twice";
        pairs.push_back(item.text);
    }
    c.top.host_token_files = std::move(pairs);
    return std::nullopt;
}

std::string show_host_token_files(const Config& c) {
    return list_text(c.top.host_token_files);
}

// [queue] visible_devices: "index" or "uuid", kept as whether it is "uuid".
std::optional<std::string> set_visible_devices(const ConfigValue& v, Config& c) {
    if (v.kind != ConfigValue::Kind::string) return "must be a string";
    if (v.text != "index" && v.text != "uuid") return "must be \"index\" or \"uuid\"";
    c.queue.visible_devices_uuid = v.text == "uuid";
    return std::nullopt;
}

std::string show_visible_devices(const Config& c) {
    return toml_quoted(c.queue.visible_devices_uuid ? "uuid" : "index");
}

// [queue] gpus and prefer: a list of GPUs as text::parse_gpu_list reads it, kept as typed.
std::optional<std::string> set_gpu_list(const ConfigValue& v, std::string& out) {
    if (v.kind != ConfigValue::Kind::string || !text::parse_gpu_list(v.text))
        return "must be GPUs as a string: indices, ranges or UUIDs, e.g. \"0-3\" or \"GPU-8f3a1c2d,GPU-77c1e0aa\"";
    out = v.text;
    return std::nullopt;
}

std::optional<std::string> set_queue_gpus(const ConfigValue& v, Config& c) {
    return set_gpu_list(v, c.queue.gpus);
}

std::string show_queue_gpus(const Config& c) {
    return toml_quoted(c.queue.gpus);
}

std::optional<std::string> set_queue_prefer(const ConfigValue& v, Config& c) {
    return set_gpu_list(v, c.queue.prefer);
}

std::string show_queue_prefer(const Config& c) {
    return toml_quoted(c.queue.prefer);
}

std::vector<Row> make_rows();

const std::vector<Row>& key_rows() {
    static const std::vector<Row> r = make_rows();
    return r;
}

// [thresholds]: the one section whose members are reached through a member pointer (Thresholds is
// shared with the rules, which name its fields).
struct ThresholdField {
    const char* name;
    double Thresholds::*field;
    double lo, hi;
    const char* help;
};

constexpr ThresholdField kThresholds[] = {
    {"gpu_memory_best_min_percent", &Thresholds::gpu_memory_best_min_percent, 0, 100,
     "GPU memory used, percent: best from here (below: the batch could grow) ..."},
    {"gpu_memory_best_max_percent", &Thresholds::gpu_memory_best_max_percent, 0, 100, "... to here"},
    {"gpu_memory_alarm_percent", &Thresholds::gpu_memory_alarm_percent, 0, 100, "GPU memory used: alarm above"},
    {"cpu_best_max_percent", &Thresholds::cpu_best_max_percent, 0, 100,
     "CPU utilisation (100 - idle - iowait): best at or below"},
    {"cpu_alarm_percent", &Thresholds::cpu_alarm_percent, 0, 100, "CPU utilisation: alarm above, sustained"},
    {"swap_best_max_bytes_per_second", &Thresholds::swap_best_max_bytes_per_second, 0, 1e12,
     "swap traffic: best at or below (close to 0: a few pages a second)"},
    {"swap_alarm_bytes_per_second", &Thresholds::swap_alarm_bytes_per_second, 0, 1e12,
     "swap traffic: alarm above, sustained"},
    {"iowait_best_max_percent", &Thresholds::iowait_best_max_percent, 0, 100, "I/O wait: best at or below"},
    {"iowait_alarm_percent", &Thresholds::iowait_alarm_percent, 0, 100,
     "I/O wait: alarm above, on the window's average"},
    {"window_seconds", &Thresholds::window_seconds, 1, 86400, "\"sustained\": over this window"},
    {"sustained_share", &Thresholds::sustained_share, 0.01, 1,
     "share of samples that must breach, and of the window they must span"},
    {"gpu_memory_near_oom_percent", &Thresholds::gpu_memory_near_oom_percent, 0, 100,
     "gpu_memory_near_oom is critical above this"},
    {"oom_horizon_minutes", &Thresholds::oom_horizon_minutes, 0, 10080,
     "gpu_memory_near_oom warns when the trend reaches 100 % this soon"},
    {"gpu_starved_percent", &Thresholds::gpu_starved_percent, 0, 100,
     "input_bound, io_bound: average GPU utilisation below this"},
    {"gpu_busy_percent", &Thresholds::gpu_busy_percent, 0, 100, "gpu_underused: utilisation above this"},
    {"gpu_active_percent", &Thresholds::gpu_active_percent, 0, 100,
     "gpu_throttled, pcie_degraded: the GPU counts as working above this"},
    {"gpu_fed_percent", &Thresholds::gpu_fed_percent, 0, 100,
     "input_bound, io_bound: the GPU must do at least this much work (0: off)"},
    {"gpu_idle_percent", &Thresholds::gpu_idle_percent, 0, 100,
     "gpu_idle_held: GPU utilisation and the holder's CPU at or below this"},
    {"idle_held_minutes", &Thresholds::idle_held_minutes, 0, 10080, "gpu_idle_held: the holder is at least this old"},
    {"tree_cpu_saturated_percent", &Thresholds::tree_cpu_saturated_percent, 0, 100,
     "input_bound: a job's processes busy at this share of their cores"},
    {"disk_busy_percent", &Thresholds::disk_busy_percent, 0, 100, "io_bound: a disk busier than this"},
    {"psi_memory_full_percent", &Thresholds::psi_memory_full_percent, 0, 100,
     "host_memory_pressure: PSI memory \"full\" avg10 above this"},
    {"runnable_per_core", &Thresholds::runnable_per_core, 0.1, 1000, "cpu_oversubscribed: runnable tasks per core"},
    {"shm_used_percent", &Thresholds::shm_used_percent, 0, 100, "shm_low: /dev/shm fuller than this"},
    {"shm_min_bytes", &Thresholds::shm_min_bytes, 0, 1e15, "shm_low: /dev/shm smaller than this with workers about"},
    {"gpu_memory_leak_bytes", &Thresholds::gpu_memory_leak_bytes, 0, 1e15, "gpu_memory_leak: growth over the window"},
    {"disk_free_percent", &Thresholds::disk_free_percent, 0, 100,
     "disk_space_low: a filesystem a job writes to with less than this share available"},
    {"disk_full_minutes", &Thresholds::disk_full_minutes, 0, 525600,
     "disk_space_low: ... or full within this many minutes at its fill rate (0: no projection)"},
    {"data_wait_percent", &Thresholds::data_wait_percent, 0, 100,
     "input_bound (the hook's steps) and data_in_step (a profiler trace): the loop waits for data above this "
     "share of step time"},
    {"data_wait_warning_percent", &Thresholds::data_wait_warning_percent, 0, 100,
     "input_bound and data_in_step are warnings from this share of step time, information below"},
    {"step_time_unstable_ratio", &Thresholds::step_time_unstable_ratio, 1, 1000,
     "step_time_unstable: p95 step time above this many medians"},
    {"rank_straggler_ratio", &Thresholds::rank_straggler_ratio, 1, 1000,
     "rank_straggler: a rank's median step (or GPU idleness) this far off the others'"},
};

const ThresholdField* threshold_field(const std::string& name) {
    for (const ThresholdField& t : kThresholds)
        if (name == t.name) return &t;
    return nullptr;
}

std::vector<Row> make_rows() {
    const double day = 86400;
    std::vector<Row> r = {
        {"sample", "proc_root", Rule::text, BATON_TEXT(sample.proc_root), 0, 0, "", "like --proc-root"},
        {"sample", "sys_root", Rule::text, BATON_TEXT(sample.sys_root), 0, 0, "", "like --sys-root"},
        {"sample", "shm_path", Rule::text, BATON_TEXT(sample.shm_path), 0, 0, "",
         "where to measure shared-memory size and use"},
        {"sample", "dev_root", Rule::text, BATON_TEXT(sample.dev_root), 0, 0, "",
         "where the GPU device files nvidiaN are (tying GPU use to processes in a container)"},
        {"sample", "skip_idle_processes", Rule::boolean, BATON_REF(bool, sample.skip_idle_processes), 0, 0, "",
         "false: read every /proc/PID/stat every tick (architecture.md, \"Idle processes\")"},
        {"sample", "filesystems", Rule::boolean, BATON_REF(bool, sample.filesystems), 0, 0, "",
         "false: no mount's space read, no disk_space_low (a box whose network mounts must not be touched)"},
        {"jobs", "scontrol", Rule::text, BATON_TEXT(jobs.scontrol), 0, 0, "",
         "names Slurm jobs whose tasks' environment is unreadable, once per job (empty: never)"},
        {"jobs", "kubelet_socket", Rule::text, BATON_TEXT(jobs.kubelet_socket), 0, 0, "",
         "the kubelet's pod-resources API: which pod each GPU was allocated to (empty: never)"},
        {"jobs", "attribution", Rule::boolean, BATON_REF(bool, jobs.attribution), 0, 0, "",
         "false: no jobs[] and no job series (processes keep their cgroup's job)"},
        {"gpu", "nvml_library", Rule::text, BATON_TEXT(gpu.nvml_library), 0, 0, "",
         "empty: $BATON_NVML_LIBRARY, else libnvidia-ml.so.1"},
        {"gpu", "nvml_deadline_ms", Rule::integer, BATON_REF(int, gpu.nvml_deadline_ms), 10, 600000, "",
         "per NVML call; past it GPU values are marked stale"},
        {"gpu", "pcie_interval_seconds", Rule::number, BATON_REF(double, gpu.pcie_interval_seconds), 0, 3600, "",
         "PCIe throughput is slow to read: at most this often"},
        {"gpu", "xid_events", Rule::boolean, BATON_REF(bool, gpu.xid_events), 0, 0, "",
         "false: NVML's XID events are not watched (no xid_errors, no gpu_xid)"},
        {"history",
         "db",
         Rule::nonempty,
         BATON_TEXT(history.db),
         0,
         0,
         "must be a path, not empty",
         "the run history of run, runs, report and compare (their --db wins)",
         {},
         nullptr,
         nullptr,
         "$XDG_STATE_HOME/baton/baton.db"},
        {"serve", "listen", Rule::nonempty, BATON_TEXT(serve.listen), 0, 0, "must not be empty",
         "ADDRESS:PORT, [IPv6]:PORT or :PORT"},
        {"serve", "interval", Rule::duration_or_secs, BATON_REF(double, serve.interval_seconds), 0.1, 60,
         "must be a duration from 0.1s to 60s", "time between samples"},
        {"serve",
         "token_file",
         Rule::nonempty,
         BATON_TEXT(serve.token_file),
         0,
         0,
         "must not be empty",
         "the bearer token; needed off loopback unless --insecure",
         {},
         nullptr,
         nullptr,
         "none"},
        {"serve", "metrics_without_token", Rule::boolean, BATON_REF(bool, serve.metrics_without_token), 0, 0, "",
         "true: /metrics answers without the token (scrapers), the API still asks"},
        {"serve",
         "allowed_hosts",
         Rule::custom,
         Ref{},
         0,
         0,
         "must be a list of host names",
         "names a loopback agent answers to besides localhost, 127.0.0.1, [::1] and its listen address",
         {},
         set_allowed_hosts,
         show_allowed_hosts},
        {"serve", "process_series", Rule::integer, BATON_REF(std::size_t, serve.process_series), 0, 10000, "",
         "processes with their own /metrics series (top N by CPU)"},
        {"serve", "dcgm_compat", Rule::boolean, BATON_REF(bool, serve.dcgm_compat), 0, 0, "",
         "also dcgm-exporter's DCGM_FI_* metrics"},
        {"serve", "jobstats_compat", Rule::boolean, BATON_REF(bool, serve.jobstats_compat), 0, 0, "",
         "also the cgroup_* and nvidia_gpu_* families Princeton's jobstats queries"},
        {"serve", "retention", Rule::duration, BATON_REF(double, serve.retention_seconds), 3600, 3650 * day,
         "must be a duration from 1h to 3650d, e.g. \"30d\"", "the machine history's minutes are kept this long"},
        {"serve", "idle_allocated_minutes", Rule::number, BATON_REF(double, serve.idle_allocated_minutes), 0, 10080, "",
         "gpu_idle_allocated: minutes a job's allocated GPU may sit at 0 % (0: off)"},
        {"launch",
         "log_group",
         Rule::nonempty,
         BATON_TEXT(launch.log_group),
         0,
         0,
         "must name a group",
         "the ranks' logs are 0640 and this group's; unset: 0600, the launching user's alone",
         {},
         nullptr,
         nullptr,
         "none"},
        {"launch",
         "hang_seconds",
         Rule::duration_or_secs,
         BATON_REF(double, launch.hang_seconds),
         0,
         7 * day,
         "must be a duration from 0 (the default rule) to 7d",
         "no rank completing a step (or no stack moving) this long is a hang; 0: the larger of 60s and 10 x the "
         "median step so far (like --hang-seconds)",
         {},
         nullptr,
         nullptr,
         "`0`"},
        {"launch",
         "on_hang",
         Rule::choice,
         BATON_TEXT(launch.on_hang),
         0,
         0,
         "",
         "report: print the verdict and keep the job; stop: tear it down with the verdict as the root cause, exit "
         "status 124 (like --on-hang)",
         {"report", "stop"}},
        {"profile", "min_share", Rule::number, BATON_REF(double, profile.min_share), 0, 1, "",
         "a profile finding (launch_bound, sync_in_step, ...) costing less than this share of the step is not raised"},
        {"profile", "warmup", Rule::integer, BATON_REF(int, profile.warmup), 0, 100000, "",
         "steps baton run --profile lets pass before its window (start-up, autotuning)"},
        {"profile", "steps", Rule::integer, BATON_REF(int, profile.steps), 1, 1000, "",
         "steps the window of baton run --profile records (--profile=STEPS wins)"},
        {"queue", "free_memory_percent", Rule::number, BATON_REF(double, queue.free_memory_percent), 0, 100, "",
         "a GPU using more than this share of its memory is not free"},
        {"queue", "share_margin_percent", Rule::number, BATON_REF(double, queue.share_margin_percent), 0, 100, "",
         "memory a GPU shared by --share jobs keeps free"},
        {"queue",
         "visible_devices",
         Rule::custom,
         Ref{},
         0,
         0,
         "must be \"index\" or \"uuid\"",
         "how CUDA_VISIBLE_DEVICES names a job's GPUs",
         {},
         set_visible_devices,
         show_visible_devices},
        {"queue", "socket_group", Rule::nonempty, BATON_TEXT(queue.socket_group), 0, 0, "must name a group",
         "a root agent's socket is this group's (0660): its members may submit"},
        {"queue",
         "gpus",
         Rule::custom,
         Ref{},
         0,
         0,
         "must be GPUs: indices, ranges or UUIDs",
         "the GPUs the queue gives jobs (\"0-3\", UUIDs); empty: every GPU (inside a Slurm allocation, its GPUs)",
         {},
         set_queue_gpus,
         show_queue_gpus},
        {"queue",
         "prefer",
         Rule::custom,
         Ref{},
         0,
         0,
         "must be GPUs: indices, ranges or UUIDs",
         "the GPUs the queue gives first, in this order; the others after them, by index",
         {},
         set_queue_prefer,
         show_queue_prefer},
        {"queue", "on_end", Rule::text, BATON_TEXT(queue.on_end), 0, 0, "",
         "a shell command run as the job's owner when a queued job ends: {id} {name} {status} {exit} {user} "
         "replaced (docs/queue.md)"},
        {"queue", "on_end_timeout", Rule::duration_or_secs, BATON_REF(double, queue.on_end_timeout), 1, 86400,
         "must be a duration from 1s to 1d", "an on-end command still running after this long is killed"},
        {"queue",
         "idle_policy",
         Rule::choice,
         BATON_TEXT(queue.idle_policy),
         0,
         0,
         "",
         "a running queued job whose GPUs all sat at 0 % for idle_minutes: off, warn (log and note), requeue "
         "(its GPUs to the jobs waiting; it runs again later) or cancel",
         {"off", "warn", "requeue", "cancel"}},
        {"queue", "idle_minutes", Rule::number, BATON_REF(double, queue.idle_minutes), 0.05, 10080, "",
         "how long a queued job's GPUs sit at 0 % before idle_policy acts"},
        {"bench", "ok_share", Rule::share, BATON_REF(double, bench.ok_share), 0, 1, "",
         "a link at this share of its hardware's peak or more is ok"},
        {"bench", "memory_ok_share", Rule::share, BATON_REF(double, bench.memory_ok_share), 0, 1, "",
         "the same for host memory (STREAM against the DIMMs' peak)"},
        {"bench", "scaling_alarm", Rule::share, BATON_REF(double, bench.scaling_alarm), 0, 1, "",
         "bench scaling flags a size whose weak-scaling efficiency is below this"},
        {"top", "graphs", Rule::boolean, BATON_REF(bool, top.graphs), 0, 0, "",
         "history graphs where the terminal has room (G toggles them)"},
        {"top",
         "graph_symbols",
         Rule::choice,
         BATON_TEXT(top.graph_symbols),
         0,
         0,
         "",
         "--ascii draws them in ASCII",
         {"braille", "block"}},
        {"top", "history", Rule::duration, BATON_REF(double, top.history_seconds), 60, 3600,
         "must be a duration from 1m to 1h, e.g. \"10m\"", "what the graphs keep (one sample per --delay)"},
        {"top",
         "columns",
         Rule::custom,
         Ref{},
         0,
         0,
         "must be a list of column names",
         "the process table's (see --columns)",
         {},
         set_columns,
         show_columns,
         "the built-in columns"},
        {"top",
         "hosts",
         Rule::custom,
         Ref{},
         0,
         0,
         "must be a list of hosts",
         "the hosts `baton top` shows, each HOST[:PORT] of its agent (default port: [serve] listen's); "
         "--hosts wins, --local shows this machine",
         {},
         set_top_hosts,
         show_top_hosts,
         "none: this machine"},
        {"top",
         "token_file",
         Rule::text,
         BATON_TEXT(top.token_file),
         0,
         0,
         "",
         "the bearer token of the hosts' agents (--token-file wins)",
         {},
         nullptr,
         nullptr,
         "[serve] token_file"},
        {"top",
         "host_token_files",
         Rule::custom,
         Ref{},
         0,
         0,
         "must be a list of \"HOST[:PORT]=PATH\"",
         "a host's own token, for agents that do not share one: [\"gpu3=/etc/baton/gpu3.token\"] (the host as "
         "named in hosts)",
         {},
         set_host_token_files,
         show_host_token_files},
    };
    for (const ThresholdField& t : kThresholds)
        r.push_back(Row{"thresholds", t.name, Rule::number, Ref{}, t.lo, t.hi, "", t.help});
    for (Row& row : r) {
        if (!row.must.empty()) continue;
        switch (row.rule) {
            case Rule::text:
            case Rule::nonempty:
                row.must = "must be a string";
                break;
            case Rule::boolean:
                row.must = "must be true or false";
                break;
            case Rule::integer:
                row.must = "must be an integer from " + range_text(row.lo) + " to " + range_text(row.hi);
                break;
            case Rule::number:
                row.must = "must be a number from " + range_text(row.lo) + " to " + range_text(row.hi);
                break;
            case Rule::share:
                row.must = "must be a share above 0 and at most 1, e.g. 0.85";
                break;
            case Rule::choice: {
                row.must = "must be";
                for (std::size_t i = 0; i < row.choices.size(); ++i)
                    row.must += std::string(i == 0 ? " " : " or ") + toml_quoted(row.choices[i]);
                break;
            }
            default:
                break;
        }
    }
    return r;
}

#undef BATON_TEXT
#undef BATON_REF

const Row* find_key_row(const std::string& section, const std::string& name) {
    for (const Row& r : key_rows())
        if (section == r.section && name == r.name) return &r;
    return nullptr;
}

std::string type_name(const Row& r) {
    switch (r.rule) {
        case Rule::text:
        case Rule::nonempty:
        case Rule::choice:
            return "string";
        case Rule::boolean:
            return "boolean";
        case Rule::integer:
            return "integer";
        case Rule::number:
        case Rule::share:
            return "number";
        case Rule::duration:
        case Rule::duration_or_secs:
            return "duration";
        case Rule::custom:
            return r.show == show_visible_devices || r.show == show_queue_gpus || r.show == show_queue_prefer
                       ? "string"
                       : "list of strings";
    }
    return "";
}

std::string key_show(const Row& r, const Config& c) {
    if (r.show) return r.show(c);
    if (std::string(r.section) == "thresholds") return key_number_text(c.thresholds.*(threshold_field(r.name)->field));
    // The accessors are the setters' (a reference into a Config): they read a copy, so a const
    // Config is never written through. Shown keys are few (doctor, docs), a copy is cheap.
    Config m = c;
    return std::visit(
        [&](auto get) -> std::string {
            const auto& v = get(m);
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::string>) {
                return toml_quoted(v);
            } else if constexpr (std::is_same_v<V, bool>) {
                return v ? "true" : "false";
            } else if constexpr (std::is_same_v<V, double>) {
                return r.rule == Rule::duration || r.rule == Rule::duration_or_secs ? duration_text(v)
                                                                                    : key_number_text(v);
            } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
                return list_text(v);
            } else {
                return std::to_string(v);
            }
        },
        r.ref);
}

// The error's tail when `v` does not fit `r`; else sets it.
std::optional<std::string> key_set(const Row& r, const ConfigValue& v, Config& c) {
    using K = ConfigValue::Kind;
    if (r.rule == Rule::custom) return r.set(v, c);
    if (std::string(r.section) == "thresholds") {
        const std::optional<double> d = value_number(v);
        if (!d || !(*d >= r.lo && *d <= r.hi)) return r.must;
        c.thresholds.*(threshold_field(r.name)->field) = *d;
        return std::nullopt;
    }
    std::optional<std::string> refused;
    std::visit(
        [&](auto get) {
            auto& into = get(c);
            using V = std::decay_t<decltype(into)>;
            if constexpr (std::is_same_v<V, std::string>) {
                if (v.kind != K::string) {
                    refused = "must be a string";
                } else if ((r.rule == Rule::nonempty && v.text.empty()) ||
                           (r.rule == Rule::choice &&
                            std::find(r.choices.begin(), r.choices.end(), v.text) == r.choices.end())) {
                    refused = r.must;
                } else {
                    into = v.text;
                }
            } else if constexpr (std::is_same_v<V, bool>) {
                if (v.kind != K::boolean)
                    refused = r.must;
                else
                    into = v.boolean;
            } else if constexpr (std::is_same_v<V, double>) {
                std::optional<double> d;
                if (r.rule == Rule::duration || r.rule == Rule::duration_or_secs) {
                    if (v.kind == K::string) d = parse_duration(v.text);
                    if (r.rule == Rule::duration_or_secs && !d) d = value_number(v);
                } else {
                    d = value_number(v);
                }
                const bool in_range = d && (r.rule == Rule::share ? *d > 0 && *d <= 1 : *d >= r.lo && *d <= r.hi);
                if (!in_range)
                    refused = r.must;
                else
                    into = *d;
            } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
                refused = r.must;  // (lists are custom rows)
            } else {
                // An integer node only: a float like 1e50 is not an integer.
                if (v.kind != K::integer || !(static_cast<double>(v.integer) >= r.lo) ||
                    !(static_cast<double>(v.integer) <= r.hi))
                    refused = r.must;
                else
                    into = static_cast<V>(v.integer);
            }
        },
        r.ref);
    return refused;
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
    static const std::vector<ConfigKey> keys = [] {
        std::vector<ConfigKey> out;
        const Config defaults;
        for (const Row& r : key_rows())
            out.push_back({r.section, r.name, type_name(r), r.default_text ? r.default_text : key_show(r, defaults),
                           r.default_text == nullptr, r.must, r.help});
        return out;
    }();
    return keys;
}

const std::vector<std::string>& config_sections() {
    static const std::vector<std::string> sections = [] {
        std::vector<std::string> out;
        for (const Row& r : key_rows())
            if (out.empty() || out.back() != r.section) out.push_back(r.section);
        return out;
    }();
    return sections;
}

bool known_config_section(const std::string& section) {
    for (const std::string& s : config_sections())
        if (s == section) return true;
    return false;
}

std::string config_value(const Config& c, const std::string& section, const std::string& name) {
    const Row* r = find_key_row(section, name);
    return r ? key_show(*r, c) : std::string();
}

std::vector<std::string> changed_config_keys(const Config& c) {
    std::vector<std::string> out;
    const Config defaults;
    for (const Row& r : key_rows()) {
        const std::string now = key_show(r, c);
        if (now != key_show(r, defaults)) out.push_back(std::string(r.section) + "." + r.name + " = " + now);
    }
    return out;
}

Status set_config_key(const std::string& section, const std::string& name, const ConfigValue& v,
                      const std::string& origin, Config& c) {
    const Row* r = find_key_row(section, name);
    if (!r) return make_error(origin + ": unknown key '" + section + "." + name + "'");
    if (std::optional<std::string> refused = key_set(*r, v, c))
        return make_error(origin + ": '" + section + "." + name + "' " + *refused);
    return Ok{};
}

}  // namespace baton
