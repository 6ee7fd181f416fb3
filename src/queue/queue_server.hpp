// The queue's half of the agent: a thread that answers clients on the Unix socket, keeps the jobs
// in the store, decides with plan() which start, starts each through its supervisor (baton
// job-shim), follows their ends and watches each running job the way `baton run` does (JobWatch,
// fed from the agent's sampler on its own thread through on_tick()). docs/queue.md says what users
// see; docs/architecture.md how it fits in the agent.
//
// Durability: every state change is one transaction in the store before anything is done about it;
// a job runs only after the store names its supervisor (pid, start time, boot), and the supervisor
// outlives the agent, so after a kill -9 and a restart each job is either re-adopted, read from the
// status its supervisor left, or marked lost (and requeued when its retries allow): never run twice.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <poll.h>
#include <sys/types.h>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/thresholds.hpp"
#include "diagnose/series.hpp"
#include "core/thread_safety.hpp"
#include "queue/job_view.hpp"
#include "queue/idle_policy.hpp"
#include "queue/job_callbacks.hpp"
#include "queue/job_cgroup.hpp"
#include "queue/job_request.hpp"
#include "queue/open_jobs.hpp"
#include "queue/job_starter.hpp"
#include "queue/job_watches.hpp"
#include "queue/queue_metrics.hpp"
#include "queue/job_shim.hpp"
#include "queue/pool.hpp"
#include "queue/protocol.hpp"
#include "queue/spawner.hpp"
#include "run/job_watch.hpp"
#include "sample/gpu/gpu_backend.hpp"
#include "sample/linux/user_names.hpp"
#include "sample/snapshot.hpp"
#include "store/history.hpp"
#include "store/shared_history.hpp"

namespace baton::queue {

struct QueueServerOptions {
    std::string socket_path;
    mode_t socket_mode = 0600;
    std::optional<gid_t> socket_group;            // the system agent's socket: group baton
    std::string db_path;                          // the history: jobs, and each job's run
    std::string jobs_dir;                         // each job's directory (spec, logs, status): JOBS_DIR/ID/attempt-N
    std::shared_ptr<Spawner> spawner;             // forks the supervisors; none, or gone: fork and exec
    std::string shim_program = "/proc/self/exe";  // ... `shim_program job-shim DIR`
    PoolOptions pool;
    bool uuid_visible_devices = false;  // CUDA_VISIBLE_DEVICES as UUIDs instead of indices
    std::optional<NvmlOptions> nvml;    // checked just before a GPU job starts; none: --no-gpus
    double end_grace_seconds = 10;      // what a job leaves running when it ends: SIGTERM, then SIGKILL after this
    bool job_cgroups = true;            // a cgroup per job when the agent's cgroup was delegated (job_cgroup.hpp)
    std::string on_end;                 // [queue] on_end: run as each job's owner when it ends (job_callbacks.hpp)
    double on_end_timeout = 60;         // ... and each job's --on-end: killed after this long
    IdlePolicy idle_policy = IdlePolicy::off;  // [queue] idle_policy (idle_policy.hpp) ...
    double idle_minutes = 30;                  // ... after this long at 0 %
    Thresholds thresholds;                     // for each job's findings
    hang::HangWatchOptions hang;               // each job's hang verdict ([launch] hang_seconds)
    // baton usage's live figures: the agent's totals of the jobs it follows now (any thread; none: the
    // written records alone, at most a minute old).
    std::function<std::vector<store::UsageRecord>()> live_usage;
};

class QueueServer {
  public:
    // The newest snapshot the agent took (null before the first).
    using SnapshotSource = std::function<std::shared_ptr<const Snapshot>()>;

    // Listens on the socket and opens the store; an error says why ("another baton agent answers on PATH").
    static Result<std::unique_ptr<QueueServer>> open(QueueServerOptions options, SnapshotSource latest);
    ~QueueServer();  // stop()
    QueueServer(const QueueServer&) = delete;
    QueueServer& operator=(const QueueServer&) = delete;

    // Re-adopts the jobs a previous agent left, then serves on its own thread.
    void start();
    void stop();

    // Called by the agent's sampling thread after each sample: feeds every running job's watch
    // (its figures, findings, output and the Python hook's events, its hang verdict) and wakes the
    // queue thread to decide again on the new snapshot. Adds to `findings` (the tick's) the jobs'
    // hang verdicts that hold ("job ID" their subject), and takes from it gpu_idle_held of the
    // processes of a paused job (baton pause: its GPU memory is held on purpose). Adds to `usage`
    // every running job, for the agent's usage tracker (baton usage).
    void on_tick(const diagnose::Window& window, std::vector<diagnose::Finding>& findings,
                 std::vector<diagnose::OtherJob>& usage);

    const std::string& socket_path() const { return options_.socket_path; }
    // The queue's families for /metrics (any thread).
    void append_metrics(formats::Exposition& e) { metrics_.append(e, unix_millis()); }

  private:
    struct Client;
    struct Running;
    QueueServer() = default;
    void loop();  // the queue thread: poll, then accept, serve, end, plan
    void accept_clients();
    bool serve_client(const pollfd& p);
    bool check_once_a_second();
    void recover();
    void readopt(const store::JobRecord& j, std::unique_ptr<Running> r);
    void schedule();
    Pool current_pool(std::set<std::uint32_t>* queue_pids = nullptr);
    // Starts a job the plan placed: its GPUs checked free, its owner, directories, environment and
    // spec (job_spec); then start_supervised hands it to its supervisor and records it running.
    void launch(std::int64_t id);
    Result<ShimSpec> job_spec(const store::JobRecord& j, const JobOwner& owner, const std::string& dir,
                              WatchedJob& watched);
    void fail_start(store::JobRecord& j, const std::string& why);
    void start_supervised(store::JobRecord& j, const std::string& dir, const std::vector<std::string>& env,
                          std::unique_ptr<WatchedJob> watched);
    void ended(std::int64_t id);  // its supervisor ended: the job's end recorded, retried or final
    void ended_unsaid(store::JobRecord& j, WatchedJob* w, unsigned retries);
    void link_runs();
    void watch(const store::JobRecord& j, pid_t pid, const std::vector<std::string>& env,
               std::unique_ptr<WatchedJob> watched);
    void handle(Client& c, const std::string& line);
    std::string answer(Client& c, const Request& r, std::string& tail);
    std::string submit(const Client& c, const Submission& s);
    std::string add_submitted(store::JobRecord j, const JobArray& array);
    std::string edit(const Client& c, std::int64_t id, const JobEdit& e);  // queue_edit.cpp
    std::string groups();                                                  // queue_groups.cpp
    std::string usage(std::int64_t since_ms, const std::string& user);     // queue_usage.cpp
    std::string set_group(const Client& c, const std::string& name, unsigned parallel);
    std::string remove_group(const Client& c, const std::string& name);
    std::string restart(const Client& c, std::int64_t id);
    std::string clean(const Client& c, bool successful_only);
    std::string list(bool all);
    std::string job_line_of(std::int64_t id);  // show
    std::string wait_for(Client& c, std::int64_t id);
    std::string change(const Client& c, const Request& r);
    Result<std::string> cancel_job(store::JobRecord j, double grace_seconds, std::int64_t now);
    Result<std::string> hold_job(const store::JobRecord& j, bool hold, std::int64_t now);
    Result<std::string> retry_job(const store::JobRecord& j, const Client& c);
    Result<std::string> pause_job(const store::JobRecord& j, bool pause, std::int64_t now);
    std::string logs(const Client& c, const Request& r, std::string& tail);
    JobView job_view(const store::JobRecord& j);  // what clients are told of it (job_view.hpp)
    std::string job_json(const store::JobRecord& j);
    std::string job_line(const store::JobRecord& j);  // the answer naming one job: {"ok":true,"job":...}
    void job_final(const store::JobRecord& j);
    Status verify_gpus(const std::vector<std::string>& uuids);
    std::string attempt_dir(std::int64_t id, int attempt) const;
    void cancel_running(Running& r, double grace_seconds);

    QueueServerOptions options_;
    SnapshotSource latest_;
    std::optional<store::History> store_;
    // The running jobs' runs are recorded through this one connection (not one each: shared_history.hpp).
    std::shared_ptr<store::SharedHistory> job_history_;
    int listen_fd_ = -1;
    int wake_fd_ = -1;  // eventfd: stop(), on_tick()
    std::thread thread_;
    // stop() (any thread) tells the queue thread to end; everything else below is the queue
    // thread's alone, but for the watches (which lock their own).
    Mutex stop_mutex_;
    bool stopping_ BATON_GUARDED_BY(stop_mutex_) = false;

    OpenJobs jobs_;   // the open jobs, the plan's reasons, the parsed requests (job_table.hpp)
    Pool last_pool_;  // the machine the last plan decided on
    std::map<int, std::unique_ptr<Client>> clients_;
    std::map<std::int64_t, std::unique_ptr<Running>> running_;
    std::unique_ptr<GpuBackend> gpus_;  // the check just before a GPU job starts
    JobCgroups cgroups_;                // a cgroup per job where the agent was handed a subtree
    os::UserNames users_;
    std::map<std::string, store::JobGroup> groups_;  // baton group: as the store keeps them
    Result<std::string> shim_dir_ = std::string();   // the stack handler's directory (JOBS_DIR/python), or why none
    JobWatches watches_;                             // shared with the sampling thread (on_tick)
    JobCallbacks callbacks_;                         // the on-end commands still running
    IdleWatch idle_;                                 // [queue] idle_policy's clock per job
    void apply_idle_policy();
    QueueMetrics metrics_;  // for /metrics (its own lock)
    void run_callbacks(const store::JobRecord& j);
    // The supervisors of the paused jobs, for on_tick (the sampling thread); the queue thread keeps it.
    Mutex paused_mutex_;
    std::set<std::uint32_t> paused_roots_ BATON_GUARDED_BY(paused_mutex_);
    void set_paused_root(std::uint32_t pid, bool paused);
};

// The default CPUs of a job that did not say: 1 for a job without GPUs; for a GPU job its share of
// the pool (the pool's CPUs / its GPUs, at least 1) times its GPUs (docs/queue.md).
unsigned default_cpus(const Resources& want, const Pool& pool);

}  // namespace baton::queue
