#include "agent/agent_settings.hpp"

#include <grp.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/allowed_cpus.hpp"
#include "core/text_parse.hpp"
#include "queue/pool.hpp"
#include "queue/queue_client.hpp"
#include "serve/auth.hpp"

namespace baton::agent {

Result<ServeSettings> serve_settings(const ServeFlags& a, const Config& c) {
    ServeSettings s;
    Result<ListenAddress> listen = parse_listen_address(a.listen.empty() ? c.serve.listen : a.listen);
    if (!listen.ok()) return make_error(ErrorCode::invalid_argument, listen.error().message);
    s.listen = *listen;
    s.interval = a.interval > 0 ? a.interval : c.serve.interval_seconds;
    const std::string token_file = a.token_file.empty() ? c.serve.token_file : a.token_file;
    if (!token_file.empty()) {
        Result<std::string> token = serve::read_token_file(token_file);
        if (!token.ok()) return make_error(ErrorCode::invalid_argument, token.error().message);
        s.service.token = *token;
    } else if (!s.listen.loopback() && !a.insecure) {
        // [serve] metrics_without_token alone: Prometheus may scrape, nothing else is served.
        if (!c.serve.metrics_without_token)
            return make_error(ErrorCode::invalid_argument,
                              "--listen " + s.listen.text() +
                                  " can be reached from other machines: give --token-file FILE (clients then send "
                                  "'Authorization: Bearer TOKEN'), [serve] metrics_without_token = true to serve "
                                  "/metrics alone, or --insecure to serve everything without a token");
        s.service.api_closed = true;
    }
    s.service.metrics_without_token = c.serve.metrics_without_token;
    if (s.listen.loopback()) {
        // DNS rebinding: on loopback, only requests naming this machine are answered.
        s.service.allowed_hosts = {"localhost", "127.0.0.1", "[::1]",
                                   s.listen.ipv6 ? "[" + s.listen.host + "]" : s.listen.host};
        s.service.allowed_hosts.insert(s.service.allowed_hosts.end(), c.serve.allowed_hosts.begin(),
                                       c.serve.allowed_hosts.end());
    }
    s.service.prometheus.process_series = c.serve.process_series;
    s.service.prometheus.dcgm_compat = a.dcgm_compat || c.serve.dcgm_compat;
    s.service.prometheus.jobstats_compat = a.jobstats_compat || c.serve.jobstats_compat;
    s.service.cgroup_root = (a.sys_root.empty() ? c.sample.sys_root : a.sys_root) + "/fs/cgroup";
    // In a DaemonSet the pod's hostname is the pod's: dcgm-exporter's NODE_NAME names the node.
    if (const char* node = std::getenv("NODE_NAME"); node && *node) s.service.prometheus.dcgm_hostname = node;
    s.service.interval_seconds = s.interval;
    s.thresholds = c.thresholds;
    return s;
}

QueueMachine this_machine(std::map<std::string, std::string> env) {
    QueueMachine m;
    m.env = std::move(env);
    m.root = geteuid() == 0;
    m.cpus = allowed_cpus();
    struct sysinfo si {};
    if (sysinfo(&si) == 0) m.memory_bytes = static_cast<std::uint64_t>(si.totalram) * si.mem_unit;
    return m;
}

Result<queue::QueueServerOptions> queue_options(const ServeFlags& a, const Config& c, const std::string& db_path,
                                                const SamplerOptions& sampler, const QueueMachine& m) {
    queue::QueueServerOptions o;
    if (!a.socket.empty()) {
        o.socket_path = a.socket;
    } else {
        Result<std::string> place = queue::own_socket_path(m.env);
        if (!place.ok()) return place.error();
        o.socket_path = *place;
    }
    if (m.root) {
        // The system agent: the members of [queue] socket_group (baton) may submit.
        const char* name = c.queue.socket_group.c_str();
        if (const group* g = getgrnam(name)) {
            o.socket_mode = 0660;
            o.socket_group = g->gr_gid;
        } else {
            std::fprintf(stderr,
                         "baton: no group '%s': only root can use the queue (groupadd %s; usermod -aG %s USER)\n", name,
                         name, name);
        }
    }
    o.db_path = db_path;
    o.jobs_dir = store::History::beside(db_path, "jobs");
    o.pool.cpus = m.cpus;
    o.pool.memory_bytes = m.memory_bytes;
    o.pool.sys_root = sampler.sys_root;
    o.pool.allowed_gpus = queue::allocation_gpus(m.env);
    // (validated when the config was read)
    o.pool.configured_gpus = text::parse_gpu_list(c.queue.gpus).value_or(std::vector<std::string>{});
    o.pool.prefer = text::parse_gpu_list(c.queue.prefer).value_or(std::vector<std::string>{});
    o.pool.free_memory_percent = c.queue.free_memory_percent;
    o.pool.share_margin_percent = c.queue.share_margin_percent;
    // Inside an allocation CUDA may number the GPUs it sees from 0: UUIDs name them the same everywhere.
    o.uuid_visible_devices = c.queue.visible_devices_uuid || o.pool.allowed_gpus.has_value();
    if (!a.no_gpus) o.nvml = sampler.nvml;  // the sampler's, from the same config
    o.thresholds = c.thresholds;
    o.hang.hang_seconds = c.launch.hang_seconds;  // the queued jobs' hang verdict, as baton launch's
    o.on_end = c.queue.on_end;
    o.on_end_timeout = c.queue.on_end_timeout;
    o.idle_policy = queue::idle_policy_from_name(c.queue.idle_policy).value_or(queue::IdlePolicy::off);  // (checked)
    o.idle_minutes = c.queue.idle_minutes;
    return o;
}

}  // namespace baton::agent
