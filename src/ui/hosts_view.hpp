// baton top --hosts: the screen of several hosts. What each host said (HostView, filled by the
// caller from its agents' answers) and what the user chose to see (HostsViewState). Plain data:
// keys change the state (hosts_keys.cpp), the layout reads both (hosts_layout.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "diagnose/finding.hpp"
#include "sample/snapshot.hpp"

namespace baton::ui {

enum class HostStatus {
    waiting,       // asked, no answer yet
    ok,            //
    stale,         // its last snapshot is old: the agent stopped sampling, or the host stopped answering
    down,          // no connection, or no full answer within the deadline
    unauthorized,  // the agent wants a token, or another one
    bad_answer,    // an answer that is not an agent's snapshot
};
const char* host_status_name(HostStatus s);

struct HostView {
    std::string name;  // as given ("gpu3", "10.0.0.7:9900")
    std::string url;   // http://HOST:PORT
    HostStatus status = HostStatus::waiting;
    std::string error;                         // why not ok
    std::shared_ptr<const Snapshot> snapshot;  // its last snapshot (its GPUs are shown while ok or stale)
    bool full_processes = false;               // that snapshot lists every process (else those on a GPU)
    std::vector<diagnose::Finding> findings;   // its agent's active findings
    double answer_seconds = 0;                 // how long its last answer took
    std::uint64_t snapshots = 0;               // snapshots read from it so far (a new one: feed the graphs)
};

// A GPU no one uses: no process on it, under 10 % busy and under 5 % of its memory used (a process
// in another container may be missing from NVML's list but not from the memory it holds). Not a
// GPU with an error, a lost one, or one in MIG mode with its instances taken.
bool gpu_is_free(const GpuInfo& g);

enum class HostSort {
    given,      // the order of --hosts
    name,       // host name
    free_gpus,  // most free GPUs first
    gpu_util,   // busiest GPUs (mean utilisation) first
    cpu,        // busiest CPU first
    memory,     // most memory used (share) first
};
char host_sort_letter(HostSort k);
const char* host_sort_name(HostSort k);
inline constexpr HostSort kHostSorts[] = {HostSort::given,    HostSort::name, HostSort::free_gpus,
                                          HostSort::gpu_util, HostSort::cpu,  HostSort::memory};

enum class HostsPrompt { none, filter, sort };

struct HostsViewState {
    HostSort sort = HostSort::given;
    bool free_only = false;  // g: only free GPUs, and only hosts that have one ("where can I run")
    // Case-insensitive text: a host whose name holds it is shown whole; else only its GPUs whose
    // model, user or command holds it (hosts with none are left out).
    std::string filter;
    std::string selected;        // the selected host's name; empty or gone: the first shown
    bool show_selection = true;  // false for printed frames (--once, batch)
    int scroll = 0;              // first line of the hosts shown
    bool help = false;
    bool ascii = false;
    HostsPrompt prompt = HostsPrompt::none;
    std::string edit;     // the filter being typed
    std::string message;  // one-off notice for the status line (cleared by the next key)
};

}  // namespace baton::ui
