#include "cli/cmd_usage.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_common.hpp"
#include "core/clock.hpp"
#include "queue/queue_calls.hpp"
#include "queue/usage_view.hpp"
#include "store/history.hpp"
#include "store/history_usage.hpp"
#include "store/usage_records.hpp"

namespace baton::cli {

CLI::App* add_usage_command(CLI::App& app, UsageArgs& a) {
    CLI::App* c = app.add_subcommand(
        "usage",
        "Who used the GPUs and CPUs: per user and per job, GPU-hours allocated and busy, SM activity, CPU-hours, "
        "peak memory against the request (the agent's samples)");
    add_duration_option(c, "--since", a.since_seconds, "The jobs seen in this last stretch of time (default 7d)", 60,
                        3650.0 * 86400);
    c->add_option("--user", a.user, "Only this user's jobs");
    c->add_option("--db", a.db, "Read this history file instead of asking the agent (its [history] db)");
    c->add_flag("--json", a.json, "Print users and jobs as JSON");
    return c;
}

int run_usage(const UsageArgs& a, const std::string&) {
    const std::int64_t since = unix_millis() - static_cast<std::int64_t>(a.since_seconds * 1000);
    std::vector<store::UsageRecord> jobs;
    if (!a.db.empty()) {
        Result<store::History> h = store::History::open(a.db, store::HistoryAccess::read);
        if (!h.ok()) return runtime_error(h.error().message);
        Result<std::vector<store::UsageRecord>> rows = h->usage_table().usage(since);
        if (!rows.ok()) return runtime_error(rows.error().message);
        jobs = store::usage_by_job(*rows, a.user);
    } else {
        Result<std::vector<store::UsageRecord>> got = queue::job_usage(environment_variables(), since, a.user);
        if (!got.ok()) {
            Error e = got.error();
            e.message += " (--db PATH reads a history file instead)";
            return agent_error(e);
        }
        jobs = std::move(*got);
    }
    const queue::UsageView view = queue::usage_view(std::move(jobs), since);
    if (a.json)
        return write_stdout(queue::usage_view_json(view).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                            "\n")
                   ? kExitOk
                   : kExitFailure;
    return write_stdout(queue::usage_text(view)) ? kExitOk : kExitFailure;
}

}  // namespace baton::cli
