// The queue server's inside, shared by its two files: queue_server.cpp (the thread, the plan, starts,
// ends, re-adoption) and queue_requests.cpp (what each client request gets). Not for other modules.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>

#include "queue/queue_server.hpp"
#include "queue/queue_socket.hpp"

namespace baton::queue {

struct QueueServer::Client {
    int fd = -1;
    Peer peer;
    std::string in, out;
    bool closing = false;                 // close once `out` is written
    std::optional<std::int64_t> waiting;  // a `wait` answered when the job ends
};

struct QueueServer::Running {
    pid_t pid = 0;
    int pidfd = -1;
    bool child = false;  // this agent started it (it must reap it)
    std::uint64_t start_ticks = 0;
    std::string dir;
    bool cancelling = false;
    // Ended by [queue] idle_policy: why (its note), and whether it goes back to the queue.
    std::string idle_note;
    bool idle_requeue = false;
};

}  // namespace baton::queue
