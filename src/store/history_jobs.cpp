// The job queue in the history database (schema 6). Every change is one statement or one
// transaction, guarded by the state the job must be in, so two writers (an agent and a `baton
// cancel` racing it, or two agents by mistake) can never both move one job: the second finds it
// moved and is told so.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "store/history.hpp"
#include "store/history_jobs.hpp"
#include "store/sqlite_statement.hpp"

namespace baton::store {

using sqlite::db_error;
using sqlite::Statement;

namespace {

// NUL-ended strings: exact for any bytes but NUL, which neither arguments nor "NAME=value" hold.
std::string pack_strings(const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& s : v) {
        out.append(s, 0, s.find('\0'));  // (a NUL inside would end the string anyway)
        out.push_back('\0');
    }
    return out;
}

std::vector<std::string> unpack_strings(std::string_view all) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < all.size()) {
        std::size_t end = all.find('\0', at);
        if (end == std::string_view::npos) end = all.size();  // a damaged last entry: kept as it is
        out.emplace_back(all.substr(at, end - at));
        at = end + 1;
    }
    return out;
}

std::string json_text(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A JSON array column, read leniently: a damaged value reads as empty, never as a crash.
nlohmann::json json_array(const sqlite::Row& row, int col) {
    nlohmann::json j = nlohmann::json::parse(row.text(col), nullptr, false);
    return j.is_array() ? j : nlohmann::json::array();
}

constexpr const char* kColumns =
    "id, owner_uid, name, argv, cwd, env, request, priority, after, after_ok, state, attempt, submit_ms, start_ms, "
    "end_ms, exit_status, gpus, cpus, pid, pid_start_ticks, COALESCE(boot_id, ''), run_id, note, paused_ms, "
    "array_id, array_index";

JobRecord read_job(const sqlite::Row& row) {
    JobRecord j;
    j.id = row.int64(0);
    j.owner_uid = static_cast<std::uint32_t>(row.int64(1));
    j.name = row.text(2);
    j.argv = unpack_strings(row.blob(3));
    j.cwd = row.text(4);
    for (std::string& kv : unpack_strings(row.blob(5))) {
        const std::size_t eq = kv.find('=');
        if (eq == std::string::npos) continue;
        j.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    j.request = row.text(6);
    j.priority = row.int32(7);
    for (const auto& a : json_array(row, 8))
        if (a.is_number_integer()) j.after.push_back(a.get<std::int64_t>());
    j.after_ok = row.int32(9) != 0;
    // A state this baton does not know (a newer one wrote it) is read as lost: nothing runs it.
    j.state = state_from_name(row.text(10)).value_or(JobState::lost);
    j.attempt = row.int32(11);
    j.submit_ms = row.int64(12);
    j.start_ms = row.maybe_int64(13);
    j.end_ms = row.maybe_int64(14);
    if (auto e = row.maybe_int64(15)) j.exit_status = static_cast<int>(*e);
    for (const auto& g : json_array(row, 16))
        if (g.is_string()) j.gpus.push_back(g.get<std::string>());
    for (const auto& c : json_array(row, 17))
        if (c.is_number_unsigned()) j.cpus.push_back(c.get<unsigned>());
    if (auto p = row.maybe_int64(18)) j.pid = static_cast<std::uint32_t>(*p);
    if (auto t = row.maybe_int64(19)) j.pid_start_ticks = static_cast<std::uint64_t>(*t);
    j.boot_id = row.text(20);
    j.run_id = row.maybe_int64(21);
    j.note = row.text(22);
    j.paused_ms = row.maybe_int64(23);
    j.array_id = row.maybe_int64(24);
    j.array_index = row.maybe_int64(25);
    return j;
}

}  // namespace

namespace {

constexpr const char* kInsertJob =
    "INSERT INTO jobs (owner_uid, name, argv, cwd, env, request, priority, after, after_ok, state, submit_ms, "
    "array_id, array_index) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id";

Status check_new(const JobRecord& j) {
    if (j.state != JobState::queued && j.state != JobState::held)
        return make_error(ErrorCode::invalid_argument,
                          std::string("a new job is queued or held, not ") + state_name(j.state));
    return Ok{};
}

// Runs the prepared kInsertJob for `j` (its array_id: `array_id` when given); the new id, or none.
std::optional<std::int64_t> insert_job(sqlite3_stmt* st, const JobRecord& j, std::optional<std::int64_t> array_id) {
    sqlite3_reset(st);
    std::vector<std::string> env;
    for (const auto& [k, v] : j.env) env.push_back(k + "=" + v);
    const std::string argv = pack_strings(j.argv), envs = pack_strings(env);
    const std::string after = json_text(j.after);
    sqlite3_bind_int64(st, 1, j.owner_uid);
    sqlite3_bind_text(st, 2, j.name.c_str(), static_cast<int>(j.name.size()), SQLITE_TRANSIENT);
    sqlite3_bind_blob(st, 3, argv.data(), static_cast<int>(argv.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, j.cwd.c_str(), static_cast<int>(j.cwd.size()), SQLITE_TRANSIENT);
    sqlite3_bind_blob(st, 5, envs.data(), static_cast<int>(envs.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, j.request.c_str(), static_cast<int>(j.request.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 7, j.priority);
    sqlite3_bind_text(st, 8, after.c_str(), static_cast<int>(after.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 9, j.after_ok ? 1 : 0);
    sqlite3_bind_text(st, 10, state_name(j.state), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 11, j.submit_ms);
    const std::optional<std::int64_t> array = array_id ? array_id : j.array_id;
    if (array)
        sqlite3_bind_int64(st, 12, *array);
    else
        sqlite3_bind_null(st, 12);
    if (j.array_index)
        sqlite3_bind_int64(st, 13, *j.array_index);
    else
        sqlite3_bind_null(st, 13);
    if (sqlite3_step(st) != SQLITE_ROW) return std::nullopt;
    const std::int64_t id = sqlite3_column_int64(st, 0);
    sqlite3_step(st);  // (RETURNING: the statement ends at its next step)
    return id;
}

}  // namespace

Result<std::int64_t> QueueJobsTable::add_job(const JobRecord& j) {
    if (Status ok = check_new(j); !ok.ok()) return ok.error();
    Statement st(db_, kInsertJob);
    if (!st.ok()) return db_error(db_, "cannot add the job");
    std::optional<std::int64_t> id = insert_job(st.get(), j, std::nullopt);
    if (!id) return db_error(db_, "cannot add the job");
    return *id;
}

Result<std::vector<std::int64_t>> QueueJobsTable::add_jobs(const std::vector<JobRecord>& jobs, bool as_array) {
    std::vector<std::int64_t> ids;
    for (const JobRecord& j : jobs)
        if (Status ok = check_new(j); !ok.ok()) return ok.error();
    if (jobs.empty()) return ids;
    if (Status s = exec("BEGIN IMMEDIATE"); !s.ok()) return s.error();
    auto fail = [&](const std::string& what) {
        Error e = db_error(db_, what);
        rollback();
        return e;
    };
    {
        Statement st(db_, kInsertJob);
        if (!st.ok()) return fail("cannot add the jobs");
        for (const JobRecord& j : jobs) {
            // The first element's id is the array's: known once it is inserted, then set on it too.
            std::optional<std::int64_t> id =
                insert_job(st.get(), j, as_array && !ids.empty() ? std::optional(ids.front()) : std::nullopt);
            if (!id) return fail("cannot add the jobs");
            ids.push_back(*id);
        }
        if (as_array) {
            Statement first(db_, "UPDATE jobs SET array_id = id WHERE id = ?");
            if (!first.ok()) return fail("cannot add the jobs");
            sqlite3_bind_int64(first.get(), 1, ids.front());
            if (sqlite3_step(first.get()) != SQLITE_DONE) return fail("cannot add the jobs");
        }
    }
    if (Status s = exec("COMMIT"); !s.ok()) {
        rollback();
        return s.error();
    }
    return ids;
}

Result<bool> QueueJobsTable::edit_job(const JobRecord& j) {
    Statement st(db_,
                 "UPDATE jobs SET name = ?, argv = ?, request = ?, priority = ?, after = ?, after_ok = ? "
                 "WHERE id = ? AND state IN ('queued', 'held')");
    if (!st.ok()) return db_error(db_, "cannot edit the job");
    const std::string argv = pack_strings(j.argv), after = json_text(j.after);
    sqlite3_bind_text(st.get(), 1, j.name.c_str(), static_cast<int>(j.name.size()), SQLITE_TRANSIENT);
    sqlite3_bind_blob(st.get(), 2, argv.data(), static_cast<int>(argv.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 3, j.request.c_str(), static_cast<int>(j.request.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int(st.get(), 4, j.priority);
    sqlite3_bind_text(st.get(), 5, after.c_str(), static_cast<int>(after.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int(st.get(), 6, j.after_ok ? 1 : 0);
    sqlite3_bind_int64(st.get(), 7, j.id);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot edit the job");
    return sqlite3_changes(db_) == 1;
}

Result<std::vector<JobGroup>> QueueJobsTable::job_groups() {
    Statement st(db_, "SELECT name, parallel, owner_uid FROM job_groups ORDER BY name");
    if (!st.ok()) return db_error(db_, "cannot read the groups");
    std::vector<JobGroup> out;
    if (sqlite::each_row(st, [&](const sqlite::Row& row) {
            JobGroup g;
            g.name = row.text(0);
            g.parallel = static_cast<unsigned>(std::max<std::int64_t>(0, row.int64(1)));
            g.owner_uid = static_cast<std::uint32_t>(row.int64(2));
            out.push_back(std::move(g));
        }) != sqlite::Walk::done)
        return read_error("cannot read the groups");
    return out;
}

Status QueueJobsTable::set_job_group(const JobGroup& g) {
    Statement st(db_,
                 "INSERT INTO job_groups (name, parallel, owner_uid) VALUES (?, ?, ?) "
                 "ON CONFLICT(name) DO UPDATE SET parallel = excluded.parallel");
    if (!st.ok()) return db_error(db_, "cannot record the group");
    sqlite3_bind_text(st.get(), 1, g.name.c_str(), static_cast<int>(g.name.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st.get(), 2, g.parallel);
    sqlite3_bind_int64(st.get(), 3, g.owner_uid);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record the group");
    return Ok{};
}

Result<bool> QueueJobsTable::remove_job_group(const std::string& name) {
    Statement st(db_, "DELETE FROM job_groups WHERE name = ?");
    if (!st.ok()) return db_error(db_, "cannot remove the group");
    sqlite3_bind_text(st.get(), 1, name.c_str(), static_cast<int>(name.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot remove the group");
    return sqlite3_changes(db_) == 1;
}

Result<std::vector<JobRecord>> QueueJobsTable::jobs(bool open_only) {
    const std::string sql = std::string("SELECT ") + kColumns + " FROM jobs" +
                            (open_only ? " WHERE state IN ('queued', 'held', 'starting', 'running')" : "") +
                            " ORDER BY id";
    Statement st(db_, sql.c_str());
    if (!st.ok()) return db_error(db_, "cannot read the queue");
    std::vector<JobRecord> out;
    if (sqlite::each_row(st, [&](const sqlite::Row& row) { out.push_back(read_job(row)); }) != sqlite::Walk::done)
        return read_error("cannot read the queue");
    return out;
}

Result<JobRecord> QueueJobsTable::job(std::int64_t id) {
    const std::string sql = std::string("SELECT ") + kColumns + " FROM jobs WHERE id = ?";
    Statement st(db_, sql.c_str());
    if (!st.ok()) return db_error(db_, "cannot read the queue");
    sqlite3_bind_int64(st.get(), 1, id);
    bool failed = false;
    if (std::optional<JobRecord> j = sqlite::first_row(st, read_job, &failed)) return std::move(*j);
    if (failed) return read_error("cannot read the queue");
    return make_error(ErrorCode::not_found, "no job " + std::to_string(id) + " in the queue");
}

Result<std::vector<std::int64_t>> QueueJobsTable::start_jobs(const std::vector<JobStartRecord>& starts,
                                                             std::int64_t now_ms) {
    std::vector<std::int64_t> moved;
    if (starts.empty()) return moved;
    if (Status s = exec("BEGIN IMMEDIATE"); !s.ok()) return s.error();
    Statement st(
        db_,
        "UPDATE jobs SET state = 'starting', paused_ms = NULL, gpus = ?, cpus = ?, start_ms = ?, end_ms = NULL, "
        "exit_status = NULL, pid = NULL, pid_start_ticks = NULL, boot_id = NULL, run_id = NULL "
        "WHERE id = ? AND state = 'queued'");
    if (!st.ok()) {
        Error e = db_error(db_, "cannot start jobs");
        rollback();
        return e;
    }
    for (const JobStartRecord& s : starts) {
        const std::string gpus = json_text(s.gpus), cpus = json_text(s.cpus);
        sqlite3_reset(st.get());
        sqlite3_bind_text(st.get(), 1, gpus.c_str(), static_cast<int>(gpus.size()), SQLITE_TRANSIENT);
        sqlite3_bind_text(st.get(), 2, cpus.c_str(), static_cast<int>(cpus.size()), SQLITE_TRANSIENT);
        sqlite3_bind_int64(st.get(), 3, now_ms);
        sqlite3_bind_int64(st.get(), 4, s.job);
        if (sqlite3_step(st.get()) != SQLITE_DONE) {
            Error e = db_error(db_, "cannot start job " + std::to_string(s.job));
            rollback();
            return e;
        }
        if (sqlite3_changes(db_) == 1) moved.push_back(s.job);
    }
    if (Status s = exec("COMMIT"); !s.ok()) {
        rollback();
        return s.error();
    }
    return moved;
}

Result<bool> QueueJobsTable::job_running(std::int64_t id, std::uint32_t pid, std::uint64_t pid_start_ticks,
                                         const std::string& boot_id, std::optional<std::int64_t> run_id) {
    Statement st(db_,
                 "UPDATE jobs SET state = 'running', pid = ?, pid_start_ticks = ?, boot_id = ?, run_id = ? "
                 "WHERE id = ? AND state = 'starting'");
    if (!st.ok()) return db_error(db_, "cannot record the job's start");
    sqlite3_bind_int64(st.get(), 1, pid);
    sqlite3_bind_int64(st.get(), 2, static_cast<sqlite3_int64>(pid_start_ticks));
    sqlite3_bind_text(st.get(), 3, boot_id.c_str(), static_cast<int>(boot_id.size()), SQLITE_TRANSIENT);
    if (run_id)
        sqlite3_bind_int64(st.get(), 4, *run_id);
    else
        sqlite3_bind_null(st.get(), 4);
    sqlite3_bind_int64(st.get(), 5, id);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record the job's start");
    return sqlite3_changes(db_) == 1;
}

Result<bool> QueueJobsTable::change_job_state(std::int64_t id, const std::vector<JobState>& from, JobState to,
                                              std::int64_t now_ms, std::optional<int> exit_status,
                                              const std::string& note) {
    if (from.empty()) return false;
    const bool ends = is_final(to);
    std::string sql =
        ends ? "UPDATE jobs SET state = ?, paused_ms = NULL, end_ms = ?, exit_status = ?, note = ?"
        : to == JobState::queued
            ? "UPDATE jobs SET state = ?, paused_ms = NULL, note = ?, gpus = '[]', cpus = '[]', start_ms = NULL, "
              "pid = NULL, pid_start_ticks = NULL, boot_id = NULL"
            : "UPDATE jobs SET state = ?, paused_ms = NULL, note = ?";
    sql += " WHERE id = ? AND state IN (";
    for (std::size_t i = 0; i < from.size(); ++i) sql += i ? ", ?" : "?";
    sql += ")";
    Statement st(db_, sql.c_str());
    if (!st.ok()) return db_error(db_, "cannot change the job's state");
    int k = 1;
    sqlite3_bind_text(st.get(), k++, state_name(to), -1, SQLITE_STATIC);
    if (ends) {
        sqlite3_bind_int64(st.get(), k++, now_ms);
        if (exit_status)
            sqlite3_bind_int(st.get(), k++, *exit_status);
        else
            sqlite3_bind_null(st.get(), k++);
    }
    sqlite3_bind_text(st.get(), k++, note.c_str(), static_cast<int>(note.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st.get(), k++, id);
    for (JobState f : from) sqlite3_bind_text(st.get(), k++, state_name(f), -1, SQLITE_STATIC);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot change the job's state");
    return sqlite3_changes(db_) == 1;
}

Result<bool> QueueJobsTable::set_job_paused(std::int64_t id, std::optional<std::int64_t> since_ms) {
    Statement st(db_, "UPDATE jobs SET paused_ms = ? WHERE id = ? AND state = 'running'");
    if (!st.ok()) return db_error(db_, "cannot record the job's pause");
    if (since_ms)
        sqlite3_bind_int64(st.get(), 1, *since_ms);
    else
        sqlite3_bind_null(st.get(), 1);
    sqlite3_bind_int64(st.get(), 2, id);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record the job's pause");
    return sqlite3_changes(db_) == 1;
}

Status QueueJobsTable::set_job_run(std::int64_t id, std::int64_t run_id) {
    Statement st(db_, "UPDATE jobs SET run_id = ? WHERE id = ?");
    if (!st.ok()) return db_error(db_, "cannot link the job to its run");
    sqlite3_bind_int64(st.get(), 1, run_id);
    sqlite3_bind_int64(st.get(), 2, id);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot link the job to its run");
    return Ok{};
}

Result<bool> QueueJobsTable::requeue_job(std::int64_t id, const std::string& note) {
    Statement st(db_,
                 "UPDATE jobs SET state = 'queued', paused_ms = NULL, attempt = attempt + 1, note = ?, start_ms = "
                 "NULL, end_ms = NULL, "
                 "exit_status = NULL, gpus = '[]', cpus = '[]', pid = NULL, pid_start_ticks = NULL, boot_id = NULL "
                 "WHERE id = ? AND state IN ('done', 'failed', 'cancelled', 'lost')");
    if (!st.ok()) return db_error(db_, "cannot requeue the job");
    sqlite3_bind_text(st.get(), 1, note.c_str(), static_cast<int>(note.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st.get(), 2, id);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot requeue the job");
    return sqlite3_changes(db_) == 1;
}

Result<std::vector<std::int64_t>> QueueJobsTable::remove_ended_jobs(std::optional<std::uint32_t> owner, bool done_only,
                                                                    const std::set<std::int64_t>& keep) {
    const std::string sql = std::string("SELECT id FROM jobs WHERE ") +
                            (done_only ? "state = 'done'" : "state IN ('done', 'failed', 'cancelled', 'lost')") +
                            (owner ? " AND owner_uid = ?" : "") +
                            // The newest job stays: SQLite gives a new row the highest id + 1, so removing
                            // it would hand its id to the next submit (a `baton logs 12` of another job).
                            " AND id < (SELECT MAX(id) FROM jobs) ORDER BY id";
    if (Status s = exec("BEGIN IMMEDIATE"); !s.ok()) return s.error();
    std::vector<std::int64_t> ended;
    {
        Statement st(db_, sql.c_str());
        if (!st.ok()) {
            Error e = db_error(db_, "cannot read the ended jobs");
            rollback();
            return e;
        }
        if (owner) sqlite3_bind_int64(st.get(), 1, *owner);
        if (sqlite::each_row(st, [&](const sqlite::Row& row) {
                if (!keep.count(row.int64(0))) ended.push_back(row.int64(0));
            }) != sqlite::Walk::done) {
            rollback();
            return read_error("cannot read the ended jobs");
        }
        Statement del(db_, "DELETE FROM jobs WHERE id = ?");
        if (!del.ok()) {
            Error e = db_error(db_, "cannot remove the ended jobs");
            rollback();
            return e;
        }
        for (std::int64_t id : ended) {
            sqlite3_reset(del.get());
            sqlite3_bind_int64(del.get(), 1, id);
            if (sqlite3_step(del.get()) != SQLITE_DONE) {
                Error e = db_error(db_, "cannot remove job " + std::to_string(id));
                rollback();
                return e;
            }
        }
    }
    if (Status s = exec("COMMIT"); !s.ok()) {
        rollback();
        return s.error();
    }
    return ended;
}

}  // namespace baton::store
