#include "store/history.hpp"
#include "store/history_bench.hpp"
#include "store/history_jobs.hpp"
#include "store/history_metrics.hpp"
#include "store/history_runs.hpp"
#include "store/history_tunings.hpp"
#include "store/history_usage.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <cctype>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "core/units.hpp"
#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "core/text_parse.hpp"
#include "formats/finding_json.hpp"
#include "store/run_owner.hpp"
#include "store/sqlite_statement.hpp"

namespace baton::store {

Result<std::int64_t> parse_run_id(const std::string& text) {
    const std::optional<std::uint64_t> id = text.size() <= 18 ? text::parse_u64(text) : std::nullopt;
    if (!id || text.find_first_not_of("0123456789") != std::string::npos)
        return make_error(ErrorCode::not_found, "no run '" + text + "' (baton runs lists the runs)");
    return static_cast<std::int64_t>(*id);
}

namespace {

// Schema versions, applied in order; PRAGMA user_version says how many ran. Add, never edit.
constexpr const char* kMigrations[] = {
    // 1: runs, samples (one packed row per tick), findings.
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL, command TEXT NOT NULL, cwd TEXT NOT NULL, host TEXT NOT NULL,"
    "  owner_pid INTEGER NOT NULL,"
    "  start_ms INTEGER NOT NULL, end_ms INTEGER, exit_status INTEGER,"
    "  state TEXT NOT NULL CHECK (state IN ('running', 'finished', 'interrupted')),"
    "  summary TEXT);"
    "CREATE TABLE samples ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  t_ms INTEGER NOT NULL, data BLOB NOT NULL,"
    "  PRIMARY KEY (run_id, t_ms)) WITHOUT ROWID;"
    "CREATE TABLE findings ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  t_ms INTEGER NOT NULL, rule TEXT NOT NULL, severity TEXT NOT NULL, subject TEXT NOT NULL,"
    "  summary TEXT NOT NULL, recommendation TEXT NOT NULL);"
    "CREATE INDEX findings_run ON findings(run_id);",
    // 2: the machine of each run (CPUs, memory, GPUs), and training-step events from the Python hook.
    "ALTER TABLE runs ADD COLUMN cpu_count INTEGER;"
    "ALTER TABLE runs ADD COLUMN memory_total_bytes INTEGER;"
    "CREATE TABLE run_gpus ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  gpu_index INTEGER NOT NULL, uuid TEXT NOT NULL, name TEXT NOT NULL, memory_total_bytes INTEGER NOT NULL,"
    "  PRIMARY KEY (run_id, gpu_index)) WITHOUT ROWID;"
    "CREATE TABLE steps ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  t_ms INTEGER NOT NULL, pid INTEGER NOT NULL, rank INTEGER NOT NULL, step INTEGER NOT NULL,"
    "  step_ms REAL NOT NULL, wait_ms REAL NOT NULL, samples INTEGER, data TEXT);"
    "CREATE INDEX steps_run ON steps(run_id, t_ms);",
    // 3: each finding's evidence (the JSON array of docs/findings.md), so that `baton compare`
    // can say how it moved between runs.
    "ALTER TABLE findings ADD COLUMN evidence TEXT;",
    // 4: the owner's start time and boot beside its pid (store/run_owner.hpp): a reused pid is
    // not a live owner.
    "ALTER TABLE runs ADD COLUMN owner_start_ticks INTEGER;"
    "ALTER TABLE runs ADD COLUMN owner_boot_id TEXT;",
    // 5: baton serve's machine history, one row per metric and minute (history_metrics.cpp).
    "CREATE TABLE metric_series ("
    "  id INTEGER PRIMARY KEY, metric TEXT NOT NULL, subject TEXT NOT NULL, UNIQUE (metric, subject));"
    "CREATE TABLE metric_minutes ("
    "  series_id INTEGER NOT NULL REFERENCES metric_series(id) ON DELETE CASCADE,"
    "  minute INTEGER NOT NULL, avg REAL NOT NULL, min REAL NOT NULL, max REAL NOT NULL,"
    "  PRIMARY KEY (series_id, minute)) WITHOUT ROWID;",
    // 6: the job queue of baton submit (history_jobs.cpp). argv and env are blobs of NUL-ended
    // strings (a command's bytes need not be UTF-8); after, gpus and cpus are JSON arrays; `request`
    // is the queue's own JSON (resources and options), opaque to the store.
    "CREATE TABLE jobs ("
    "  id INTEGER PRIMARY KEY,"
    "  owner_uid INTEGER NOT NULL, name TEXT NOT NULL, argv BLOB NOT NULL, cwd TEXT NOT NULL, env BLOB NOT NULL,"
    "  request TEXT NOT NULL, priority INTEGER NOT NULL, after TEXT NOT NULL, after_ok INTEGER NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN"
    "    ('queued', 'held', 'starting', 'running', 'done', 'failed', 'cancelled', 'lost')),"
    "  attempt INTEGER NOT NULL DEFAULT 0,"
    "  submit_ms INTEGER NOT NULL, start_ms INTEGER, end_ms INTEGER, exit_status INTEGER,"
    "  gpus TEXT NOT NULL DEFAULT '[]', cpus TEXT NOT NULL DEFAULT '[]',"
    "  pid INTEGER, pid_start_ticks INTEGER, boot_id TEXT,"
    "  run_id INTEGER, note TEXT NOT NULL DEFAULT '');"
    "CREATE INDEX jobs_open ON jobs(state) WHERE state IN ('queued', 'held', 'starting', 'running');",
    // 7: what a run is ('run': a command baton watched; 'bench': a baton bench), and each bench's
    // links with their figures and verdicts (history_bench.cpp).
    "ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'run';"
    "CREATE TABLE bench_links ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL, bench TEXT NOT NULL, link TEXT NOT NULL, measured REAL NOT NULL,"
    "  peak REAL, peak_source TEXT NOT NULL, need REAL, verdict TEXT NOT NULL, detail TEXT NOT NULL,"
    "  unit TEXT NOT NULL DEFAULT 'B/s',"
    "  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;",
    // 8: a hung job's verdicts as said (the sentence and the ranks' grouped stacks), for `baton runs
    // show` and the report's Hang section.
    "CREATE TABLE run_hangs ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  t_ms INTEGER NOT NULL, rule TEXT NOT NULL, text TEXT NOT NULL);"
    "CREATE INDEX run_hangs_run ON run_hangs(run_id, t_ms);",
    // 9: the profiler windows of `baton run --profile`: the trace as the hook wrote it (gzipped
    // Chrome-trace JSON), for `baton profile show RUN`.
    "CREATE TABLE run_profiles ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  t_ms INTEGER NOT NULL, rank INTEGER NOT NULL, steps INTEGER NOT NULL, trace BLOB NOT NULL);"
    "CREATE INDEX run_profiles_run ON run_profiles(run_id, t_ms);",
    // 10: the hook's captures at a CUDA out-of-memory error (docs/memory.md), as the hook wrote them
    // (JSON), for the report's Memory section and a newer baton's judgement.
    "CREATE TABLE run_oom_captures ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  t_ms INTEGER NOT NULL, rank INTEGER NOT NULL, pid INTEGER NOT NULL, capture TEXT NOT NULL);"
    "CREATE INDEX run_oom_captures_run ON run_oom_captures(run_id, t_ms);",
    // 11: when a running job was paused (`baton pause`; NULL while it runs on), so that `baton queue`
    // says so after the agent restarts (its processes stay stopped meanwhile).
    "ALTER TABLE jobs ADD COLUMN paused_ms INTEGER;",
    // 12: job arrays (`baton submit --array`: each element a job; array_id is the first element's
    // id) and the queue's groups with their parallel limits (`baton group`).
    "ALTER TABLE jobs ADD COLUMN array_id INTEGER;"
    "ALTER TABLE jobs ADD COLUMN array_index INTEGER;"
    "CREATE TABLE job_groups (name TEXT PRIMARY KEY, parallel INTEGER NOT NULL, owner_uid INTEGER NOT NULL) "
    "WITHOUT ROWID;",
    // 13: who used the GPUs and CPUs (baton usage, history_usage.cpp): per job and hour, what the
    // agent integrated from its samples.
    "CREATE TABLE usage ("
    "  label TEXT NOT NULL, start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL,"
    "  kind TEXT NOT NULL, job TEXT NOT NULL, name TEXT NOT NULL, user TEXT NOT NULL, ended INTEGER NOT NULL,"
    "  seconds REAL NOT NULL, gpus INTEGER NOT NULL, gpu_seconds REAL NOT NULL, gpu_busy_seconds REAL NOT NULL,"
    "  sm_seconds REAL NOT NULL, sm_busy_seconds REAL NOT NULL,"
    "  gpu_memory_peak_bytes INTEGER NOT NULL, gpu_memory_total_bytes INTEGER NOT NULL,"
    "  cpus INTEGER, cpu_seconds_allocated REAL NOT NULL, cpu_seconds REAL NOT NULL,"
    "  memory_peak_bytes INTEGER NOT NULL, memory_allocated_bytes INTEGER,"
    "  PRIMARY KEY (label, start_ms)) WITHOUT ROWID;"
    "CREATE INDEX usage_end ON usage(end_ms);",
    // 14: what `baton tune` found for a command (history_tunings.cpp): its winner, which
    // `baton run --tuned` applies, and its whole result.
    "CREATE TABLE tunings ("
    "  id INTEGER PRIMARY KEY, t_ms INTEGER NOT NULL, command TEXT NOT NULL, script TEXT NOT NULL,"
    "  cwd TEXT NOT NULL, settings TEXT NOT NULL, label TEXT NOT NULL, gain REAL, measure TEXT NOT NULL,"
    "  baseline_run INTEGER, winner_run INTEGER, report TEXT NOT NULL);"
    "CREATE INDEX tunings_script ON tunings(script, cwd, t_ms);",
    // 15: the run's energy (store/run_energy.hpp's JSON), written with its end.
    "ALTER TABLE runs ADD COLUMN energy TEXT;",
};

using sqlite::db_error;
using sqlite::Row;
using sqlite::Statement;
using sqlite::Walk;

void put_f32(std::string& out, float v) {
    char b[4];
    std::memcpy(b, &v, 4);  // little-endian on every platform baton builds for (x86-64, aarch64)
    out.append(b, 4);
}

bool get_f32(const std::string& in, std::size_t& at, float& v) {
    if (at + 4 > in.size()) return false;
    std::memcpy(&v, in.data() + at, 4);
    at += 4;
    return true;
}

// The evidence column as written by add_finding; empty for runs recorded before schema 3, and
// for text that is not what baton wrote (the finding itself is still read).
std::vector<diagnose::Evidence> parse_evidence(const std::string& json) {
    std::vector<diagnose::Evidence> out;
    if (json.empty()) return out;
    const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
    if (!j.is_array()) return out;
    auto number = [](const nlohmann::json& o, const char* k) -> std::optional<double> {
        if (o.contains(k) && o[k].is_number()) return o[k].get<double>();
        return std::nullopt;
    };
    for (const nlohmann::json& o : j) {
        if (!o.is_object() || !o.contains("metric") || !o["metric"].is_string()) continue;
        diagnose::Evidence e;
        e.metric = o["metric"].get<std::string>();
        e.average = number(o, "average");
        e.minimum = number(o, "minimum");
        e.maximum = number(o, "maximum");
        if (o.contains("threshold") && o["threshold"].is_string()) e.threshold = o["threshold"].get<std::string>();
        e.breach_share = number(o, "breach_share");
        e.samples = static_cast<std::size_t>(std::clamp(number(o, "samples").value_or(0), 0.0, 1e15));
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace

std::string History::beside(const std::string& db_path, const std::string& name) {
    return db_path.substr(0, db_path.rfind('/') + 1) + name;
}

std::string History::default_path() {
    if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/baton/baton.db";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/state/baton/baton.db";
    return "baton.db";
}

namespace {

// Creates the missing directories of `dir` with mode 0700 (the history holds other people's
// command lines); directories that exist are left as they are.
void create_private_directories(const std::filesystem::path& dir) {
    if (dir.empty()) return;
    std::error_code ec;
    if (std::filesystem::exists(dir, ec)) return;
    create_private_directories(dir.parent_path());
    mkdir(dir.c_str(), 0700);
}

// A path as a file: URI (for SQLite's immutable=1).
std::string file_uri(const std::string& path) {
    std::string abs = path;
    if (abs.empty() || abs[0] != '/') {
        std::error_code ec;
        abs = std::filesystem::absolute(path, ec).string();
    }
    std::string out = "file:";
    for (unsigned char c : abs) {
        if (std::isalnum(c) || std::strchr("/-._~", c)) {
            out.push_back(static_cast<char>(c));
        } else {
            char b[4];
            std::snprintf(b, sizeof b, "%%%02X", c);
            out += b;
        }
    }
    return out + "?immutable=1";
}

Result<sqlite3*> open_connection(const std::string& name, int flags) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(name.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
        std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
        sqlite3_close(db);
        return make_error(msg);
    }
    sqlite3_busy_timeout(db, 5000);  // a reader may wait for a writer's checkpoint, a writer for another
    // A page cache of 512 KiB, not SQLite's 2 MiB: the agent keeps its connections for months, and
    // each one's cache would fill to 2 MiB as its history grew. Writes append at the B-trees' right
    // edges and a page not cached is read from the kernel's page cache.
    sqlite3_exec(db, "PRAGMA cache_size=-512", nullptr, nullptr, nullptr);
    return db;
}

// PRAGMA user_version (any int a file may hold, negative ones included: found by fuzz_history),
// or the result code of the read that failed.
struct SchemaVersion {
    int rc = SQLITE_OK;
    int version = 0;
};

SchemaVersion user_version(sqlite3* db) {
    Statement st(db, "PRAGMA user_version");
    if (!st.ok()) return {sqlite3_errcode(db), 0};
    const int rc = sqlite3_step(st.get());
    if (rc != SQLITE_ROW) return {rc, 0};
    return {SQLITE_OK, sqlite3_column_int(st.get(), 0)};
}

// An error when `v` is not a schema this baton can read or migrate.
Status check_schema(const SchemaVersion& v, int latest) {
    if (v.rc != SQLITE_OK) return make_error(std::string("not a baton history (") + sqlite3_errstr(v.rc) + ")");
    if (v.version < 0) return make_error("not a baton history (schema " + std::to_string(v.version) + ")");
    if (v.version > latest)
        return make_error("written by a newer baton (schema " + std::to_string(v.version) + ", this one knows " +
                          std::to_string(latest) + ")");
    return Ok{};
}

constexpr int kLatestSchema = static_cast<int>(std::size(kMigrations));

}  // namespace

Result<History> History::open(const std::string& path, HistoryAccess access) {
    std::error_code ec;
    if (access != HistoryAccess::record && !std::filesystem::exists(path, ec))
        return make_error(ErrorCode::not_found, "no history at " + path + " (baton run records runs there)");
    if (access == HistoryAccess::read) {
        Result<sqlite3*> db = open_connection(path, SQLITE_OPEN_READONLY);
        if (!db.ok()) return make_error("cannot open " + path + ": " + db.error().message);
        History h(*db, path);
        SchemaVersion version = user_version(*db);
        if (version.rc == SQLITE_CANTOPEN || version.rc == SQLITE_READONLY) {
            // A WAL database in a directory we cannot write: SQLite cannot create its index (-shm)
            // there. Read the file as it is (no writer can be adding to it either).
            sqlite3_close(h.db_);
            h.db_ = nullptr;
            db = open_connection(file_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
            if (!db.ok()) return make_error("cannot open " + path + ": " + db.error().message);
            h.db_ = *db;
            version = user_version(*db);
        }
        if (Status schema = check_schema(version, kLatestSchema); !schema.ok()) return schema.error().context(path);
        if (version.version == 0) return make_error(path + ": not a baton history (no runs were ever recorded there)");
        if (version.version < kLatestSchema) {
            // Recorded by an older baton: the upgrade needs write access once.
            Result<History> w = open(path, HistoryAccess::manage);
            if (!w.ok())
                return make_error(path + ": recorded by an older baton (schema " + std::to_string(version.version) +
                                  "), and upgrading it failed: " + w.error().message);
        }
        return h;
    }
    if (access == HistoryAccess::record) {
        create_private_directories(std::filesystem::path(path).parent_path());
        // Created by us, 0600: SQLite would create it 0644 (its -wal and -shm files take the
        // database's mode).
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) close(fd);
    }
    Result<sqlite3*> db = open_connection(path, SQLITE_OPEN_READWRITE);
    if (!db.ok()) return make_error("cannot open " + path + ": " + db.error().message);
    History h(*db, path);
    // SQLite answers "database is locked" at once, without its busy handler, to some of this while
    // another process sets up the same new file (switching it to WAL): tried again for up to 5 s.
    const double deadline = monotonic_seconds() + 5;
    for (;;) {
        h.last_rc_ = SQLITE_OK;
        Status s = Ok{};
        // WAL: readers never block the writer, and a killed writer leaves a consistent database.
        for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON"})
            if (s.ok()) s = h.exec(pragma);
        if (s.ok()) s = h.migrate();
        if (s.ok()) break;
        const bool busy = h.last_rc_ == SQLITE_BUSY || h.last_rc_ == SQLITE_LOCKED;
        if (!busy || monotonic_seconds() > deadline) return make_error(path + ": " + s.error().message);
        sleep_seconds(0.02);
    }
    h.mark_interrupted();
    return h;
}

Status History::migrate() {
    // The check and the migration in one write transaction: two baton runs starting on a new
    // database at once would otherwise both see schema 0 and both create the tables.
    if (Status s = exec("BEGIN IMMEDIATE"); !s.ok()) return s;
    const SchemaVersion version = user_version(db_);
    auto fail = [&](const std::string& why) {
        rollback();
        return make_error(why);
    };
    if (Status schema = check_schema(version, kLatestSchema); !schema.ok()) return fail(schema.error().message);
    for (int v = version.version; v < kLatestSchema; ++v) {
        const std::string sql = std::string(kMigrations[v]) + "PRAGMA user_version=" + std::to_string(v + 1) + ";";
        if (Status s = exec(sql.c_str()); !s.ok())
            return fail("migration to schema " + std::to_string(v + 1) + " failed: " + s.error().message);
    }
    if (Status s = exec("COMMIT"); !s.ok()) return fail(s.error().message);
    return Ok{};
}

// Runs whose baton is gone (kill -9, power loss, a reboot) become interrupted.
void History::mark_interrupted() {
    std::vector<std::int64_t> dead;
    {
        Statement st(db_,
                     "SELECT id, owner_pid, owner_start_ticks, COALESCE(owner_boot_id, '') FROM runs WHERE state = "
                     "'running'");
        (void)sqlite::each_row(st, [&](const Row& row) {  // best effort, as the updates below
            RunOwner o;
            o.pid = row.int64(1);
            if (!row.null(2)) o.start_ticks = static_cast<std::uint64_t>(row.int64(2));
            o.boot_id = row.text(3);
            if (!owner_alive(o)) dead.push_back(row.int64(0));
        });
    }
    for (std::int64_t id : dead) {
        Statement st(db_, "UPDATE runs SET state = 'interrupted' WHERE id = ?");
        sqlite3_bind_int64(st.get(), 1, id);
        sqlite3_step(st.get());  // best effort: readers judge the owner again anyway
    }
}

Error History::read_error(const std::string& what) const {
    const int rc = sqlite3_errcode(db_);
    std::string msg = path_ + ": " + what + ": " + sqlite3_errmsg(db_);
    if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) msg += " (the database file is damaged)";
    return make_error(msg);
}

History::History(History&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) {
    o.db_ = nullptr;
}

History::~History() {
    if (db_) sqlite3_close(db_);
}

Status History::exec(const char* sql) {
    char* err = nullptr;
    if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
        last_rc_ = rc & 0xFF;  // the primary code (BUSY, LOCKED, FULL, ...)
        std::string msg = err ? err : sqlite3_errmsg(db_);
        sqlite3_free(err);
        return make_error(msg);
    }
    return Ok{};
}

Result<std::int64_t> RunWrites::begin_run(const std::string& name, const std::string& command, const std::string& cwd,
                                          const std::string& host, std::int64_t start_ms) {
    Statement st(db_,
                 "INSERT INTO runs (name, command, cwd, host, owner_pid, start_ms, state, owner_start_ticks, "
                 "owner_boot_id) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?)");
    if (!st.ok()) return db_error(db_, "cannot record the run");
    sqlite3_bind_text(st.get(), 1, name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 2, command.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 3, cwd.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 4, host.c_str(), -1, SQLITE_TRANSIENT);
    const RunOwner owner = current_owner();
    sqlite3_bind_int64(st.get(), 5, owner.pid);
    sqlite3_bind_int64(st.get(), 6, start_ms);
    if (owner.start_ticks)
        sqlite3_bind_int64(st.get(), 7, static_cast<sqlite3_int64>(*owner.start_ticks));
    else
        sqlite3_bind_null(st.get(), 7);
    sqlite3_bind_text(st.get(), 8, owner.boot_id.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record the run");
    return sqlite3_last_insert_rowid(db_);
}

namespace {

// The blob's units: host and GPU memory in GiB, swap and disk rates in MB/s (decimal), -1 for unknown.
constexpr double kBlobGiB = kBytesPerGiB;
constexpr double kBlobMB = kBytesPerMB;
constexpr std::uint16_t kBlobNoThrottle = 0xFFFF;  // throttle reasons not reported

float blob_value(const std::optional<double>& v, double unit = 1) {
    return v ? static_cast<float>(*v / unit) : -1.0f;
}
std::optional<double> from_blob(float v, double unit = 1) {
    return v < 0 ? std::nullopt : std::optional<double>(static_cast<double>(v) * unit);
}

}  // namespace

std::string pack_sample(const RunSample& s) {
    // Layout, all little-endian: u8 version (3), u8 GPU count, 8 x f32 host and job figures (version 1
    // had the first 6: no disk rates), then per GPU: u8 index, 3 x f32 (utilisation, memory GiB, SM
    // activity or -1), and from version 3 3 x f32 (power W, temperature C, SM clock MHz, each or -1)
    // and u16 clock-event reasons (0xFFFF: not reported).
    std::string out;
    out.push_back(3);
    out.push_back(static_cast<char>(std::min<std::size_t>(s.gpus.size(), 255)));
    for (float v :
         {static_cast<float>(s.cpu_percent), static_cast<float>(s.iowait_percent),
          static_cast<float>(s.memory_used_bytes / kBlobGiB), static_cast<float>(s.swap_bytes_per_second / kBlobMB),
          static_cast<float>(s.job_cpu_percent), static_cast<float>(s.job_rss_bytes / kBlobGiB),
          blob_value(s.disk_read_bytes_per_second, kBlobMB), blob_value(s.disk_write_bytes_per_second, kBlobMB)})
        put_f32(out, v);
    for (std::size_t i = 0; i < s.gpus.size() && i < 255; ++i) {
        const RunSample::Gpu& g = s.gpus[i];
        out.push_back(static_cast<char>(g.index));
        put_f32(out, static_cast<float>(g.utilization_percent));
        put_f32(out, static_cast<float>(g.memory_used_bytes / kBlobGiB));
        put_f32(out, blob_value(g.sm_activity_percent));
        put_f32(out, blob_value(g.power_watts));
        put_f32(out, blob_value(g.temperature_celsius));
        put_f32(out, blob_value(g.sm_clock_mhz));
        const std::uint16_t throttle = g.throttle_reasons.value_or(kBlobNoThrottle);
        out.push_back(static_cast<char>(throttle & 0xFF));
        out.push_back(static_cast<char>(throttle >> 8));
    }
    return out;
}

bool unpack_sample(const std::string& in, RunSample& s) {
    if (in.size() < 2 || in[0] < 1 || in[0] > 3) return false;
    const int version = in[0];
    const auto gpus = static_cast<unsigned char>(in[1]);
    std::size_t at = 2;
    float host[8] = {0, 0, 0, 0, 0, 0, -1, -1};  // version 1 stops after the job's RSS
    for (int i = 0; i < (version >= 2 ? 8 : 6); ++i)
        if (!get_f32(in, at, host[i])) return false;
    s.cpu_percent = host[0];
    s.iowait_percent = host[1];
    s.memory_used_bytes = host[2] * kBlobGiB;
    s.swap_bytes_per_second = host[3] * kBlobMB;
    s.job_cpu_percent = host[4];
    s.job_rss_bytes = host[5] * kBlobGiB;
    s.disk_read_bytes_per_second = from_blob(host[6], kBlobMB);
    s.disk_write_bytes_per_second = from_blob(host[7], kBlobMB);
    s.gpus.clear();
    for (unsigned i = 0; i < gpus; ++i) {
        if (at >= in.size()) return false;
        RunSample::Gpu g;
        g.index = static_cast<std::uint8_t>(in[at++]);
        float f[6] = {0, 0, -1, -1, -1, -1};  // before version 3: no power, temperature or clock
        for (int k = 0; k < (version >= 3 ? 6 : 3); ++k)
            if (!get_f32(in, at, f[k])) return false;
        g.utilization_percent = f[0];
        g.memory_used_bytes = f[1] * kBlobGiB;
        g.sm_activity_percent = from_blob(f[2]);
        g.power_watts = from_blob(f[3]);
        g.temperature_celsius = from_blob(f[4]);
        g.sm_clock_mhz = from_blob(f[5]);
        if (version >= 3) {
            if (at + 2 > in.size()) return false;
            const auto throttle = static_cast<std::uint16_t>(static_cast<unsigned char>(in[at]) |
                                                             static_cast<unsigned char>(in[at + 1]) << 8);
            if (throttle != kBlobNoThrottle) g.throttle_reasons = throttle;
            at += 2;
        }
        s.gpus.push_back(g);
    }
    return at == in.size();
}

Status RunWrites::set_machine(std::int64_t run, unsigned cpu_count, std::uint64_t memory_total_bytes,
                              const std::vector<RunGpu>& gpus) {
    if (Status s = exec("BEGIN"); !s.ok()) return s;
    auto fail = [&] {
        Error e = db_error(db_, "cannot record the machine");
        rollback();
        return e;
    };
    {
        Statement st(db_, "UPDATE runs SET cpu_count = ?, memory_total_bytes = ? WHERE id = ?");
        if (!st.ok()) return fail();
        sqlite3_bind_int64(st.get(), 1, cpu_count);
        sqlite3_bind_int64(st.get(), 2, static_cast<sqlite3_int64>(memory_total_bytes));
        sqlite3_bind_int64(st.get(), 3, run);
        if (sqlite3_step(st.get()) != SQLITE_DONE) return fail();
    }
    for (const RunGpu& g : gpus) {
        Statement st(
            db_,
            "INSERT OR REPLACE INTO run_gpus (run_id, gpu_index, uuid, name, memory_total_bytes) VALUES (?, ?, "
            "?, ?, ?)");
        if (!st.ok()) return fail();
        sqlite3_bind_int64(st.get(), 1, run);
        sqlite3_bind_int64(st.get(), 2, g.index);
        sqlite3_bind_text(st.get(), 3, g.uuid.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st.get(), 4, g.name.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st.get(), 5, static_cast<sqlite3_int64>(g.memory_total_bytes));
        if (sqlite3_step(st.get()) != SQLITE_DONE) return fail();
    }
    return exec("COMMIT");
}

Status RunWrites::add_step(std::int64_t run, const StepEvent& e) {
    Statement st(db_,
                 "INSERT INTO steps (run_id, t_ms, pid, rank, step, step_ms, wait_ms, samples, data) VALUES (?, ?, ?, "
                 "?, ?, ?, ?, ?, ?)");
    if (!st.ok()) return db_error(db_, "cannot record a step");
    sqlite3_bind_int64(st.get(), 1, run);
    sqlite3_bind_int64(st.get(), 2, e.t_ms);
    sqlite3_bind_int64(st.get(), 3, e.pid);
    sqlite3_bind_int(st.get(), 4, e.rank);
    sqlite3_bind_int64(st.get(), 5, e.step);
    sqlite3_bind_double(st.get(), 6, e.step_ms);
    sqlite3_bind_double(st.get(), 7, e.wait_ms);
    if (e.samples)
        sqlite3_bind_int64(st.get(), 8, *e.samples);
    else
        sqlite3_bind_null(st.get(), 8);
    if (e.data.empty())
        sqlite3_bind_null(st.get(), 9);
    else
        sqlite3_bind_text(st.get(), 9, e.data.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record a step");
    return Ok{};
}

void History::rollback() {
    (void)exec("ROLLBACK");
}

Status RunWrites::add_steps(std::int64_t run, const std::vector<StepEvent>& steps) {
    if (steps.empty()) return Ok{};
    if (Status s = exec("BEGIN"); !s.ok()) return s;
    for (const StepEvent& e : steps)
        if (Status s = add_step(run, e); !s.ok()) {
            rollback();
            return s;
        }
    return exec("COMMIT");
}

Status RunWrites::add_sample(std::int64_t run, const RunSample& s) {
    Statement st(db_, "INSERT OR REPLACE INTO samples (run_id, t_ms, data) VALUES (?, ?, ?)");
    if (!st.ok()) return db_error(db_, "cannot record a sample");
    const std::string blob = pack_sample(s);
    sqlite3_bind_int64(st.get(), 1, run);
    sqlite3_bind_int64(st.get(), 2, s.t_ms);
    sqlite3_bind_blob(st.get(), 3, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record a sample");
    return Ok{};
}

Status RunWrites::add_finding(std::int64_t run, std::int64_t t_ms, const diagnose::Finding& f) {
    Statement st(db_,
                 "INSERT INTO findings (run_id, t_ms, rule, severity, subject, summary, recommendation, evidence) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    if (!st.ok()) return db_error(db_, "cannot record a finding");
    sqlite3_bind_int64(st.get(), 1, run);
    sqlite3_bind_int64(st.get(), 2, t_ms);
    sqlite3_bind_text(st.get(), 3, f.rule.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 4, diagnose::severity_name(f.severity), -1, SQLITE_STATIC);
    sqlite3_bind_text(st.get(), 5, f.subject.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 6, f.summary.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 7, f.recommendation.c_str(), -1, SQLITE_TRANSIENT);
    std::string evidence;
    {
        JsonWriter w(evidence);
        formats::write_evidence_json(w, f.evidence);
    }
    sqlite3_bind_text(st.get(), 8, evidence.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record a finding");
    return Ok{};
}

Status RunWrites::replace_finding(std::int64_t run, std::int64_t t_ms, const diagnose::Finding& f) {
    Statement st(db_,
                 "UPDATE findings SET severity = ?, summary = ?, recommendation = ?, evidence = ? WHERE rowid = "
                 "(SELECT rowid FROM findings WHERE run_id = ? AND rule = ? AND subject = ? ORDER BY t_ms DESC "
                 "LIMIT 1)");
    if (!st.ok()) return db_error(db_, "cannot record a finding");
    std::string evidence;
    {
        JsonWriter w(evidence);
        formats::write_evidence_json(w, f.evidence);
    }
    sqlite3_bind_text(st.get(), 1, diagnose::severity_name(f.severity), -1, SQLITE_STATIC);
    sqlite3_bind_text(st.get(), 2, f.summary.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 3, f.recommendation.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 4, evidence.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st.get(), 5, run);
    sqlite3_bind_text(st.get(), 6, f.rule.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 7, f.subject.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record a finding");
    if (sqlite3_changes(db_) == 0) return add_finding(run, t_ms, f);  // none yet: recorded as new
    return Ok{};
}

Status RunWrites::finish_run(std::int64_t run, std::int64_t end_ms, int exit_status, const std::string& summary,
                             const std::string& energy) {
    Statement st(
        db_, "UPDATE runs SET state = 'finished', end_ms = ?, exit_status = ?, summary = ?, energy = ? WHERE id = ?");
    if (!st.ok()) return db_error(db_, "cannot finish the run");
    sqlite3_bind_int64(st.get(), 1, end_ms);
    sqlite3_bind_int(st.get(), 2, exit_status);
    sqlite3_bind_text(st.get(), 3, summary.c_str(), -1, SQLITE_TRANSIENT);
    if (energy.empty())
        sqlite3_bind_null(st.get(), 4);
    else
        sqlite3_bind_text(st.get(), 4, energy.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st.get(), 5, run);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot finish the run");
    return Ok{};
}

Result<std::string> RunReads::owner_label(std::int64_t pid, std::uint64_t start_ticks) {
    struct Query {
        const char* sql;
        const char* what;
    };
    for (const Query& q : {Query{"SELECT id, name FROM runs WHERE owner_pid = ?1 AND owner_start_ticks = ?2 "
                                 "ORDER BY id DESC LIMIT 1",
                                 "run"},
                           Query{"SELECT id, name FROM jobs WHERE pid = ?1 AND pid_start_ticks = ?2 "
                                 "ORDER BY id DESC LIMIT 1",
                                 "queued job"}}) {
        Statement st(db_, q.sql);
        if (!st.ok()) return read_error("cannot look up an owner");
        sqlite3_bind_int64(st.get(), 1, pid);
        sqlite3_bind_int64(st.get(), 2, static_cast<sqlite3_int64>(start_ticks));
        bool failed = false;
        const std::optional<std::string> label = sqlite::first_row(
            st,
            [&](const Row& row) {
                return std::string(q.what) + " " + std::to_string(row.int64(0)) + " (" + row.text(1) + ")";
            },
            &failed);
        if (label) return *label;
        if (failed) return read_error("cannot look up an owner");
    }
    return std::string();
}

Result<std::vector<RunRecord>> RunReads::runs() {
    Statement st(
        db_,
        "SELECT id, name, command, cwd, host, start_ms, end_ms, exit_status, state,"
        " (SELECT COUNT(*) FROM samples WHERE run_id = runs.id),"
        " (SELECT COUNT(*) FROM findings WHERE run_id = runs.id), COALESCE(summary, ''), cpu_count,"
        " memory_total_bytes, owner_pid, owner_start_ticks, COALESCE(owner_boot_id, ''), kind, COALESCE(energy, '')"
        " FROM runs ORDER BY id");
    std::vector<RunRecord> out;
    const Walk runs = sqlite::each_row(st, [&](const Row& row) {
        RunRecord r;
        r.id = row.int64(0);
        r.name = row.text(1);
        r.command = row.text(2);
        r.cwd = row.text(3);
        r.host = row.text(4);
        r.start_ms = row.int64(5);
        r.end_ms = row.maybe_int64(6);
        if (!row.null(7)) r.exit_status = row.int32(7);
        // The schema admits only the names run_state.hpp knows; a newer kind reads as a run.
        r.state = run_state_from_name(row.text(8)).value_or(RunState::interrupted);
        r.samples = row.int64(9);
        r.findings = row.int64(10);
        r.summary = row.text(11);
        if (!row.null(12)) r.cpu_count = static_cast<unsigned>(row.int64(12));
        if (!row.null(13)) r.memory_total_bytes = static_cast<std::uint64_t>(row.int64(13));
        r.kind = run_kind_from_name(row.text(17)).value_or(RunKind::run);
        r.energy = row.text(18);
        r.owner.pid = row.int64(14);
        if (!row.null(15)) r.owner.start_ticks = static_cast<std::uint64_t>(row.int64(15));
        r.owner.boot_id = row.text(16);
        // A reader judges the owner itself: it does not write.
        if (r.state == RunState::running && !owner_alive(r.owner)) r.state = RunState::interrupted;
        out.push_back(std::move(r));
    });
    if (runs != Walk::done) return read_error("cannot list runs");
    Statement gs(db_,
                 "SELECT run_id, gpu_index, uuid, name, memory_total_bytes FROM run_gpus ORDER BY run_id, gpu_index");
    const Walk gpus = sqlite::each_row(gs, [&](const Row& row) {
        const std::int64_t id = row.int64(0);
        auto it = std::find_if(out.begin(), out.end(), [&](const RunRecord& r) { return r.id == id; });
        if (it == out.end()) return;
        it->gpus.push_back(
            {static_cast<unsigned>(row.int64(1)), row.text(2), row.text(3), static_cast<std::uint64_t>(row.int64(4))});
    });
    if (gpus != Walk::done) return read_error("cannot list runs' GPUs");
    return out;
}

Result<RunRecord> RunReads::run(std::int64_t id) {
    Result<std::vector<RunRecord>> all = runs();
    if (!all.ok()) return all.error();
    for (RunRecord& r : *all)
        if (r.id == id) return std::move(r);
    return make_error("no run " + std::to_string(id) + " in the history");
}

Status RunWrites::add_hang(std::int64_t run, std::int64_t t_ms, const std::string& rule, const std::string& text) {
    Statement st(db_, "INSERT INTO run_hangs (run_id, t_ms, rule, text) VALUES (?, ?, ?, ?)");
    if (!st.ok()) return db_error(db_, "cannot record a hang verdict");
    sqlite3_bind_int64(st.get(), 1, run);
    sqlite3_bind_int64(st.get(), 2, t_ms);
    sqlite3_bind_text(st.get(), 3, rule.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.get(), 4, text.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record a hang verdict");
    return Ok{};
}

Status RunWrites::add_profile(std::int64_t run, const RecordedProfile& p) {
    Statement st(db_, "INSERT INTO run_profiles (run_id, t_ms, rank, steps, trace) VALUES (?, ?, ?, ?, ?)");
    if (!st.ok()) return db_error(db_, "cannot record a profile");
    sqlite3_bind_int64(st.get(), 1, run);
    sqlite3_bind_int64(st.get(), 2, p.t_ms);
    sqlite3_bind_int64(st.get(), 3, p.rank);
    sqlite3_bind_int64(st.get(), 4, p.steps);
    sqlite3_bind_blob64(st.get(), 5, p.trace_gz.data(), p.trace_gz.size(), SQLITE_TRANSIENT);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record a profile");
    return Ok{};
}

Result<std::vector<RecordedProfile>> RunReads::profiles(std::int64_t run) {
    Statement st(db_, "SELECT t_ms, rank, steps, trace FROM run_profiles WHERE run_id = ? ORDER BY t_ms");
    const std::string what = "cannot read the profiles of run " + std::to_string(run);
    if (!st.ok()) return read_error(what);
    sqlite3_bind_int64(st.get(), 1, run);
    std::vector<RecordedProfile> out;
    const Walk walk = sqlite::each_row(st, [&](const Row& row) {
        out.push_back({row.int64(0), static_cast<int>(row.int64(1)), row.int64(2), row.blob(3)});
    });
    if (walk != Walk::done) return read_error(what);
    return out;
}

Status RunWrites::add_oom_capture(std::int64_t run, const RecordedOomCapture& c) {
    Statement st(db_, "INSERT INTO run_oom_captures (run_id, t_ms, rank, pid, capture) VALUES (?, ?, ?, ?, ?)");
    if (!st.ok()) return db_error(db_, "cannot record an out-of-memory capture");
    sqlite3_bind_int64(st.get(), 1, run);
    sqlite3_bind_int64(st.get(), 2, c.t_ms);
    sqlite3_bind_int64(st.get(), 3, c.rank);
    sqlite3_bind_int64(st.get(), 4, c.pid);
    sqlite3_bind_text64(st.get(), 5, c.json.data(), c.json.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot record an out-of-memory capture");
    return Ok{};
}

Result<std::vector<RecordedOomCapture>> RunReads::oom_captures(std::int64_t run) {
    Statement st(db_, "SELECT t_ms, rank, pid, capture FROM run_oom_captures WHERE run_id = ? ORDER BY t_ms");
    const std::string what = "cannot read the out-of-memory captures of run " + std::to_string(run);
    if (!st.ok()) return read_error(what);
    sqlite3_bind_int64(st.get(), 1, run);
    std::vector<RecordedOomCapture> out;
    const Walk walk = sqlite::each_row(st, [&](const Row& row) {
        out.push_back(
            {row.int64(0), static_cast<int>(row.int64(1)), static_cast<std::uint32_t>(row.int64(2)), row.text(3)});
    });
    if (walk != Walk::done) return read_error(what);
    return out;
}

Result<std::vector<RecordedHang>> RunReads::hangs(std::int64_t run) {
    Statement st(db_, "SELECT t_ms, rule, text FROM run_hangs WHERE run_id = ? ORDER BY t_ms");
    const std::string what = "cannot read the hang verdicts of run " + std::to_string(run);
    if (!st.ok()) return read_error(what);
    sqlite3_bind_int64(st.get(), 1, run);
    std::vector<RecordedHang> out;
    const Walk walk = sqlite::each_row(st, [&](const Row& row) {
        out.push_back({row.int64(0), row.text(1), row.text(2)});
    });
    if (walk != Walk::done) return read_error(what);
    return out;
}

Result<StoredRun> RunReads::load_run(std::int64_t id) {
    StoredRun d;
    Result<RunRecord> r = run(id);
    if (!r.ok()) return r.error();
    d.run = std::move(*r);
    Result<std::vector<RunSample>> s = samples(id);
    if (!s.ok()) return s.error();
    Result<std::vector<RecordedFinding>> f = findings(id);
    if (!f.ok()) return f.error();
    Result<std::vector<StepEvent>> st = steps(id);
    if (!st.ok()) return st.error();
    Result<std::vector<RecordedHang>> h = hangs(id);
    if (!h.ok()) return h.error();
    d.hangs = std::move(*h);
    d.samples = std::move(*s);
    d.findings = std::move(*f);
    d.steps = std::move(*st);
    return d;
}

Result<std::vector<RunSample>> RunReads::samples(std::int64_t run) {
    Statement st(db_, "SELECT t_ms, data FROM samples WHERE run_id = ? ORDER BY t_ms");
    const std::string what = "cannot read the samples of run " + std::to_string(run);
    if (!st.ok()) return read_error(what);
    sqlite3_bind_int64(st.get(), 1, run);
    std::vector<RunSample> out;
    std::optional<std::int64_t> damaged;  // the time of a sample that does not unpack
    const Walk walk = sqlite::each_row(st, [&](const Row& row) {
        RunSample s;
        s.t_ms = row.int64(0);
        if (!unpack_sample(row.blob(1), s)) {
            damaged = s.t_ms;
            return false;
        }
        out.push_back(std::move(s));
        return true;
    });
    if (damaged)
        return make_error(h_.path() + ": run " + std::to_string(run) + ": a damaged sample at " +
                          std::to_string(*damaged));
    if (walk != Walk::done) return read_error(what);
    return out;
}

Result<std::vector<RecordedFinding>> RunReads::findings(std::int64_t run) {
    Statement st(
        db_,
        "SELECT t_ms, rule, severity, subject, summary, recommendation, COALESCE(evidence, '') FROM findings WHERE "
        "run_id = ? ORDER BY t_ms");
    const std::string what = "cannot read the findings of run " + std::to_string(run);
    if (!st.ok()) return read_error(what);
    sqlite3_bind_int64(st.get(), 1, run);
    std::vector<RecordedFinding> out;
    const Walk walk = sqlite::each_row(st, [&](const Row& row) {
        out.push_back({row.int64(0), row.text(1), row.text(2), row.text(3), row.text(4), row.text(5),
                       parse_evidence(row.text(6))});
    });
    if (walk != Walk::done) return read_error(what);
    return out;
}

Result<std::vector<StepEvent>> RunReads::steps(std::int64_t run) {
    Statement st(db_,
                 "SELECT t_ms, pid, rank, step, step_ms, wait_ms, samples, COALESCE(data, '') FROM steps WHERE run_id "
                 "= ? ORDER BY t_ms, rank");
    const std::string what = "cannot read the steps of run " + std::to_string(run);
    if (!st.ok()) return read_error(what);
    sqlite3_bind_int64(st.get(), 1, run);
    std::vector<StepEvent> out;
    const Walk walk = sqlite::each_row(st, [&](const Row& row) {
        StepEvent e;
        e.t_ms = row.int64(0);
        e.pid = static_cast<std::uint32_t>(row.int64(1));
        e.rank = row.int32(2);
        e.step = row.int64(3);
        e.step_ms = row.real(4);
        e.wait_ms = row.real(5);
        e.samples = row.maybe_int64(6);
        e.data = row.text(7);
        out.push_back(std::move(e));
    });
    if (walk != Walk::done) return read_error(what);
    return out;
}

Result<int> RunReads::prune(std::int64_t before_ms) {
    Statement st(db_, "DELETE FROM runs WHERE state != 'running' AND COALESCE(end_ms, start_ms) < ?");
    if (!st.ok()) return db_error(db_, "cannot prune");
    sqlite3_bind_int64(st.get(), 1, before_ms);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return db_error(db_, "cannot prune");
    return sqlite3_changes(db_);
}

Result<std::vector<RunRecord>> RunReads::prunable(std::int64_t before_ms) {
    Result<std::vector<RunRecord>> all = runs();
    if (!all.ok()) return all.error();
    std::vector<RunRecord> out;
    for (RunRecord& r : *all)
        if (r.state != RunState::running && r.end_ms.value_or(r.start_ms) < before_ms) out.push_back(std::move(r));
    return out;
}

Result<std::int64_t> History::vacuum() {
    // The database's size in pages: what VACUUM can shrink (the WAL is truncated after it).
    auto bytes = [&]() -> std::int64_t {
        auto pragma = [&](const char* sql) {
            const Statement st(db_, sql);
            return sqlite::first_row(st, [](const Row& row) { return row.int64(0); }).value_or(0);
        };
        return pragma("PRAGMA page_count") * pragma("PRAGMA page_size");
    };
    const std::int64_t before = bytes();
    if (Status s = exec("VACUUM"); !s.ok()) return make_error("cannot give the space back: " + s.error().message);
    // VACUUM wrote the whole file through the log; truncating it is best effort (a reader holding
    // the log open keeps it until it closes), and the space is counted after either way.
    (void)exec("PRAGMA wal_checkpoint(TRUNCATE)");
    return before - bytes();
}

std::string History::integrity() {
    const Statement st(db_, "PRAGMA integrity_check");
    return sqlite::first_row(st, [](const Row& row) { return row.text(0); }).value_or(sqlite3_errmsg(db_));
}

HistoryTable::HistoryTable(History& h) : h_(h), db_(h.db_) {}

Status HistoryTable::exec(const char* sql) const {
    return h_.exec(sql);
}

void HistoryTable::rollback() const {
    h_.rollback();
}

Error HistoryTable::read_error(const std::string& what) const {
    return h_.read_error(what);
}

RunWrites History::run_writes() {
    return RunWrites(*this);
}

RunReads History::run_reads() {
    return RunReads(*this);
}

BenchTable History::bench_table() {
    return BenchTable(*this);
}

TuningTable History::tuning_table() {
    return TuningTable(*this);
}

MinuteTable History::minute_table() {
    return MinuteTable(*this);
}

UsageTable History::usage_table() {
    return UsageTable(*this);
}

QueueJobsTable History::queue_jobs() {
    return QueueJobsTable(*this);
}

}  // namespace baton::store
