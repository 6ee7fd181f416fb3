// baton's configuration: TOML files in layers, every key optional, command-line flags win.
//
// Read in order, each file's keys over the previous ones: /etc/baton/baton.toml (the system's;
// $BATON_SYSTEM_CONFIG names another), then $XDG_CONFIG_HOME/baton/baton.toml (else
// ~/.config/baton/baton.toml), then the file given with --config (or $BATON_CONFIG). A missing
// system or user file is not an error; a missing file named explicitly is, and so is any
// malformed file (the message names the file, the line and the key).
// Keys are documented in docs/cli.md ("Configuration").
#pragma once

#include <string>
#include <vector>

#include "core/listen_address.hpp"
#include "core/result.hpp"
#include "core/thresholds.hpp"

namespace baton {

// One struct per section of the file, its members named as the keys (a member that holds a
// duration says its unit: [serve] interval is serve.interval_seconds). The key table in
// core/config.cpp reads them, checks them and documents them (config_keys()).
struct Config {
    struct Sample {
        std::string proc_root = "/proc";
        std::string sys_root = "/sys";
        // Where /dev/shm is, for its size and use (statvfs).
        std::string shm_path = "/dev/shm";
        std::string dev_root = "/dev";  // where the GPU device files (nvidiaN) are, as processes opened them
        // Skip the stat read of processes that provably did not run (ProcessTable). Off: every
        // process's stat is read every tick (for comparison, or a kernel that misreports).
        bool skip_idle_processes = true;
        // Each real mount's space and where jobs write (disk_space_low); off: none read.
        bool filesystems = true;
    } sample;
    struct Jobs {  // whose job each process serves (docs/fleet.md)
        // Names Slurm jobs whose processes' environment baton cannot read, once per job; empty: never.
        std::string scontrol = "scontrol";
        // The kubelet's pod-resources socket: which pod and container each GPU was allocated to; empty: never.
        std::string kubelet_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
        // Off: no jobs[] (no job table, no scontrol, no kubelet); processes keep their cgroup's job.
        bool attribution = true;
    } jobs;
    struct Gpu {
        // Empty: $BATON_NVML_LIBRARY, else "libnvidia-ml.so.1" from the loader's search path.
        std::string nvml_library;
        // Deadline for each NVML call, in milliseconds.
        int nvml_deadline_ms = 2000;
        // PCIe throughput is slow to read: at most once per this many seconds.
        double pcie_interval_seconds = 5.0;
        // NVML's critical-error (XID) events, watched on a thread of their own; off: not watched.
        bool xid_events = true;
    } gpu;
    struct History {
        // The run history database; empty: $XDG_STATE_HOME/baton/baton.db (store/history.hpp).
        std::string db;
    } history;
    struct Serve {  // baton serve; flags win
        // ADDRESS:PORT the HTTP endpoints listen on
        std::string listen = "127.0.0.1:" + std::to_string(kDefaultAgentPort);
        double interval_seconds = 1;         // time between samples
        std::string token_file;              // file holding the bearer token clients must send
        bool metrics_without_token = false;  // /metrics answers without the token (scrapers)
        // Names besides localhost and the listen address a loopback agent answers to (its Host header).
        std::vector<std::string> allowed_hosts;
        std::size_t process_series = 20;        // processes with their own /metrics series (top N by CPU)
        bool dcgm_compat = false;               // also dcgm-exporter's DCGM_FI_* families
        bool jobstats_compat = false;           // also the families jobstats queries (cgroup_*, nvidia_gpu_*)
        double retention_seconds = 30 * 86400;  // the machine history's minutes are kept this long
        double idle_allocated_minutes = 60;     // gpu_idle_allocated: an allocated GPU at 0 % this long (0: off)
    } serve;
    struct Queue {                           // baton submit's queue, kept by the agent
        double free_memory_percent = 5;      // a GPU using more than this share of its memory is not free
        double share_margin_percent = 10;    // memory a GPU shared by --share jobs keeps free
        bool visible_devices_uuid = false;   // CUDA_VISIBLE_DEVICES as UUIDs ("uuid") instead of indices ("index")
        std::string socket_group = "baton";  // a root agent's socket is this group's (0660): its members may submit
        std::string gpus;                    // the GPUs the queue may give jobs ("0-3", UUIDs); empty: every GPU
        std::string prefer;                  // the GPUs it gives first, in this order; the others after, by index
        std::string on_end;                  // a shell command run (as the job's owner) when a job ends; "": none
        double on_end_timeout = 60;          // ... killed (its process group) after this long
        std::string idle_policy = "off";     // a job whose GPUs sit at 0 %: off, warn, requeue or cancel ...
        double idle_minutes = 30;            // ... after this long
    } queue;
    struct Launch {
        std::string log_group;           // the rank logs are 0640 and this group's; empty: 0600, the user's alone
        double hang_seconds = 0;         // no progress this long is a hang; 0: max(60 s, 10 x the median step)
        std::string on_hang = "report";  // report (keep the job) or stop (tear it down, exit 124)
    } launch;
    struct Profile {              // baton profile, baton run --profile (docs/profile.md)
        double min_share = 0.05;  // a profile finding costing less of the step is not raised
        int warmup = 10;          // steps baton run --profile lets pass before its window
        int steps = 5;            // steps the window records (--profile=STEPS wins)
    } profile;
    struct Bench {                     // docs/bench.md
        double ok_share = 0.85;        // a link measuring at least this share of its peak is ok (85 %)
        double memory_ok_share = 0.6;  // the same for host memory: STREAM seldom passes 80 % of the DIMMs' peak
        double scaling_alarm = 0.7;    // bench scaling flags a size whose weak-scaling efficiency is below
    } bench;
    struct Top {                                // baton top; flags and keys win
        bool graphs = true;                     // history graphs where the terminal has room (G toggles)
        std::string graph_symbols = "braille";  // "braille" or "block" (--ascii: ASCII)
        double history_seconds = 600;           // what the graphs keep, 1 minute to 1 hour
        std::string columns;                    // the process table's columns, comma-separated; empty: the default
        std::string hosts;                      // --hosts' default: HOST[:PORT] comma-separated; empty: this machine
        std::string token_file;                 // the hosts' agents' token; empty: [serve] token_file
        std::vector<std::string> host_token_files;  // "HOST[:PORT]=PATH": a host's own token
    } top;
    Thresholds thresholds;
};

// The layers load_config() reads before the explicit file: the system file, then the user's.
std::vector<std::string> default_config_layers();

// Every file load_config(path) reads, in order: the default layers, then `path` or $BATON_CONFIG.
std::vector<std::string> config_files(const std::string& path);

// Reads the default layers, then `path` (or $BATON_CONFIG when `path` is empty), over the
// defaults.
Result<Config> load_config(const std::string& path);

// Parses TOML text over the defaults; `origin` names it in error messages.
Result<Config> parse_config(const std::string& text, const std::string& origin);

// Parses TOML text over `into` (the keys it sets replace those of earlier layers).
Status apply_config(const std::string& text, const std::string& origin, Config& into);

}  // namespace baton
