// A damaged (or hostile) history file opened by a reading command: every read is a row or an
// error, never a crash, a hang or a read past the data (SQLite guards its pages; baton guards the
// sample blobs and evidence JSON it stores in them).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "store/history.hpp"
#include "store/history_usage.hpp"
#include "store/history_runs.hpp"
#include "store/usage_records.hpp"

namespace {

// The fuzzer's own directory for the file it opens, removed with what SQLite left there when the
// fuzzer exits (libFuzzer ends with exit(), which runs static destructors): a run leaves nothing.
struct ScratchDir {
    std::string path;
    ScratchDir() {
        char tmpl[] = "/tmp/baton-fuzz-history-XXXXXX";
        if (mkdtemp(tmpl)) path = tmpl;
    }
    ~ScratchDir() {
        if (path.empty()) return;
        for (const char* name : {"/baton.db", "/baton.db-wal", "/baton.db-shm", "/baton.db-journal"})
            unlink((path + name).c_str());
        rmdir(path.c_str());
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const ScratchDir dir;
    if (dir.path.empty()) return 0;
    const std::string path = dir.path + "/baton.db";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    for (const char* side : {"-wal", "-shm"}) unlink((path + side).c_str());
    {
        baton::Result<baton::store::History> h = baton::store::History::open(path, baton::store::HistoryAccess::read);
        if (h.ok()) {
            baton::Result<std::vector<baton::store::RunRecord>> runs = h->run_reads().runs();
            if (runs.ok())
                for (const baton::store::RunRecord& r : *runs) (void)h->run_reads().load_run(r.id);
            // baton usage --db: every record read back, merged by job, as JSON and back.
            baton::Result<std::vector<baton::store::UsageRecord>> usage = h->usage_table().usage(0);
            if (usage.ok())
                for (const baton::store::UsageRecord& r : baton::store::usage_by_job(*usage)) {
                    baton::Result<baton::store::UsageRecord> back =
                        baton::store::parse_usage_json(baton::store::usage_json(r));
                    // What was read is what a record can hold (the store hands no negative or NaN
                    // figure over): its JSON reads back the same, unless summing made one infinite.
                    const bool finite = std::isfinite(r.seconds + r.gpu_seconds + r.gpu_busy_seconds + r.sm_seconds +
                                                      r.sm_busy_seconds + r.cpu_seconds + r.cpu_seconds_allocated);
                    if (finite && (!back.ok() || !(*back == r))) std::abort();
                }
        }
    }
    return 0;
}
