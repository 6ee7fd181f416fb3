#include "cli/cmd_clean.hpp"

#include <cstdio>
#include <iostream>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "clean/ender.hpp"
#include "clean/leftovers.hpp"
#include "clean/process_facts.hpp"
#include "cli/cli_common.hpp"
#include "core/config.hpp"
#include "core/json_writer.hpp"
#include "core/printable.hpp"
#include "sample/sampler.hpp"
#include "store/history.hpp"

namespace baton::cli {

namespace {

std::string age_text(double s) {
    if (s < 120) return fmt::format("{:.0f}s", s);
    if (s < 7200) return fmt::format("{:.0f}m", s / 60);
    if (s < 172800) return fmt::format("{:.0f}h", s / 3600);
    return fmt::format("{:.0f}d", s / 86400);
}

std::string gib_text(std::uint64_t bytes) {
    return bytes ? fmt::format("{:.1f} GiB", static_cast<double>(bytes) / 1073741824.0) : "-";
}

std::string table(const std::vector<Leftover>& list) {
    std::string out =
        fmt::format("{:>8} {:<10} {:>5} {:>9} {:<14} {}\n", "PID", "USER", "AGE", "GPU MEM", "KIND", "COMMAND");
    for (const Leftover& l : list) {
        std::string command = l.command.empty() ? "[" + l.name + "]" : l.command;
        if (command.size() > 60) command = command.substr(0, 57) + "...";
        out += fmt::format("{:>8} {:<10} {:>5} {:>9} {:<14} {}\n", l.pid, l.user.substr(0, 10), age_text(l.age_seconds),
                           gib_text(l.gpu_memory_bytes), leftover_kind_name(l.kind), command);
        out += "         " + l.reason + "\n";
        if (!l.endable) out += "         left alone: " + l.left_alone + "\n";
    }
    return out;
}

void leftovers_json(JsonWriter& w, const std::vector<Leftover>& list) {
    w.key("leftovers");
    w.begin_array();
    for (const Leftover& l : list) {
        w.begin_object();
        w.field("kind", leftover_kind_name(l.kind));
        w.field("pid", l.pid);
        w.field("ppid", l.ppid);
        w.field("uid", l.uid);
        w.field("user", l.user);
        w.field("name", l.name);
        w.field("command", l.command);
        w.field("age_seconds", l.age_seconds);
        w.field("gpu_memory_bytes", l.gpu_memory_bytes);
        w.key("gpus");
        w.begin_array();
        for (unsigned g : l.gpus) w.value(g);
        w.end_array();
        w.field("reason", l.reason);
        w.field("endable", l.endable);
        if (!l.endable) w.field("left_alone", l.left_alone);
        w.end_object();
    }
    w.end_array();
}

}  // namespace

CLI::App* add_clean_command(CLI::App& app, CleanArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "clean",
        "List what holds GPUs or memory for nothing (orphaned ranks, leftovers of ended runs, defunct "
        "processes) and end your own, by pid, after confirmation");
    cmd->add_flag("--dry-run", a.dry_run, "List only: signal nothing");
    cmd->add_flag("-y,--yes", a.yes, "End the listed processes without asking (for scripts)");
    cmd->add_option("--gpu", a.gpu, "Only what holds this GPU (its index, as baton top numbers them)")
        ->check(CLI::Range(0, 1023));
    add_duration_option(cmd, "--older-than", a.older_than,
                        "Only processes older than this, e.g. 10m (default: any age)", 0, 3650 * 86400.0);
    cmd->add_flag("--json", a.json, "One JSON object (docs/cli.md); ends processes only with --yes");
    add_duration_option(cmd, "--grace", a.grace, "Time between SIGTERM and SIGKILL, 0 to 10m (default 5s)", 0, 600);
    cmd->add_flag("--no-gpus", a.no_gpus, "Do not load NVML (no GPU memory: leftovers of baton only)");
    cmd->add_option("--db", a.db,
                    "History database that names an ended baton's run or job (default: [history] db in the config, "
                    "else $XDG_STATE_HOME/baton/baton.db)");
    return cmd;
}

int run_clean(const CleanArgs& a, const std::string& config_path) {
    Result<Config> cfg = load_config(config_path);
    if (!cfg.ok()) return runtime_error(cfg.error().message);
    Result<SamplerOptions> so = sampler_options(*cfg, "", "", a.no_gpus);
    if (!so.ok()) return runtime_error(so.error().message);
    so->skip_idle_processes = false;  // every process's state as it is now (a zombie does not run)
    Snapshot snap;
    Sampler(*so).take(snap);
    CleanFilter filter;
    filter.caller_uid = static_cast<std::uint32_t>(geteuid());
    filter.caller_pid = static_cast<std::uint32_t>(getpid());
    if (a.gpu >= 0) filter.gpu = static_cast<unsigned>(a.gpu);
    filter.older_than_seconds = a.older_than;
    std::map<std::uint32_t, ProcessFacts> facts = gather_process_facts(snap);
    // The history names what an ended owner was (its run or queued job), when it recorded one.
    if (Result<std::string> db = history_path(a.db, config_path); db.ok() && access(db->c_str(), R_OK) == 0) {
        if (Result<History> h = History::open(*db, HistoryAccess::read); h.ok())
            for (auto& [pid, f] : facts)
                if (f.owner_pid && !f.owner_alive)
                    f.owner_label = h->owner_label(*f.owner_pid, f.owner_start_ticks).value_or("");
    }
    const std::vector<Leftover> list = find_leftovers(snap, facts, filter);
    std::vector<EndTarget> targets;
    for (const Leftover& l : list)
        if (l.endable) targets.push_back({l.pid, l.start_ticks, l.gpu_memory_bytes});
    const bool act = !targets.empty() && !a.dry_run && (a.yes || !a.json);

    if (!a.json) {
        if (list.empty()) {
            std::printf(
                "nothing to clean: no orphaned GPU process, no leftover of an ended baton, no defunct process\n");
            return kExitOk;
        }
        std::fputs(printable_text(table(list)).c_str(), stdout);
        if (!snap.gpu_status.empty() && snap.gpu_status != "ok" && !a.no_gpus)
            std::printf("(GPU memory unknown: %s)\n", escaped_line(snap.gpu_status).c_str());
        if (targets.empty()) {
            std::printf("nothing baton clean may end\n");
            return kExitOk;
        }
        if (a.dry_run) {
            std::printf("would end %zu process(es) (--dry-run: nothing signalled)\n", targets.size());
            return kExitOk;
        }
        if (!a.yes) {
            if (!isatty(STDIN_FILENO))
                return usage_error(
                    fmt::format("clean: {} process(es) to end: pass --yes to end them without asking, "
                                "or --dry-run to list only",
                                targets.size()));
            std::printf("End %zu process(es): SIGTERM, then SIGKILL after %.0f s? [y/N] ", targets.size(), a.grace);
            std::fflush(stdout);
            std::string answer;
            std::getline(std::cin, answer);
            if (answer != "y" && answer != "Y" && answer != "yes") {
                std::printf("nothing ended\n");
                return kExitFailure;
            }
        }
    }
    std::vector<EndResult> ended;
    if (act) ended = end_processes(targets, a.grace);
    std::uint64_t freed = 0;
    bool all_done = true;
    for (const EndResult& r : ended) {
        const bool gone =
            r.outcome == EndOutcome::ended || r.outcome == EndOutcome::killed || r.outcome == EndOutcome::gone_before;
        if (gone) freed += r.gpu_memory_bytes;
        all_done &= gone || r.outcome == EndOutcome::reused;
    }
    if (a.json) {
        std::string out;
        JsonWriter w(out);
        w.begin_object();
        w.field("dry_run", !act);
        leftovers_json(w, list);
        w.key("ended");
        w.begin_array();
        for (const EndResult& r : ended) {
            w.begin_object();
            w.field("pid", r.pid);
            w.field("outcome", end_outcome_name(r.outcome));
            if (!r.detail.empty()) w.field("error", r.detail);
            w.end_object();
        }
        w.end_array();
        w.field("gpu_memory_freed_bytes", freed);
        w.end_object();
        w.finish();
        out.push_back('\n');
        if (!write_stdout(out)) return kExitFailure;
        return all_done ? kExitOk : kExitFailure;
    }
    for (const EndResult& r : ended) {
        switch (r.outcome) {
            case EndOutcome::ended:
                std::printf("pid %u: ended (SIGTERM)\n", r.pid);
                break;
            case EndOutcome::killed:
                std::printf("pid %u: killed (SIGKILL after %.0f s)\n", r.pid, a.grace);
                break;
            case EndOutcome::gone_before:
                std::printf("pid %u: had ended already\n", r.pid);
                break;
            case EndOutcome::reused:
                std::printf("pid %u: now names another process (started after the listing): left alone\n", r.pid);
                break;
            case EndOutcome::refused:
                std::printf("pid %u: not signalled: %s\n", r.pid, r.detail.c_str());
                break;
            case EndOutcome::survived:
                std::printf("pid %u: still there after SIGKILL (waiting in the kernel, state D?)\n", r.pid);
                break;
        }
    }
    std::printf("GPU memory freed: %s\n", freed ? gib_text(freed).c_str() : "none (none of them held any)");
    return all_done ? kExitOk : kExitFailure;
}

}  // namespace baton::cli
