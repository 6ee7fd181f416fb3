// The queue's Unix socket: where clients find the agent, the listening and connecting ends, and who
// is on the other end (SO_PEERCRED: the kernel's word, never the request's).
//
// The system agent listens on /run/baton/baton.sock (group baton, 0660); a user's own agent on
// $XDG_RUNTIME_DIR/baton/baton.sock (0600). A client never talks to a socket that belongs to
// somebody else than root or itself: in a shared directory another user could put one there.
#pragma once

#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

#include "core/result.hpp"

namespace baton::queue {

struct SocketPlace {
    std::string path;
    bool system = false;  // the system agent's (root's), else the user's own
};

// The places a client tries, in order: the system agent's under `run_root` (/run), then the user's
// under XDG_RUNTIME_DIR when `env` has it.
std::vector<SocketPlace> socket_places(const std::map<std::string, std::string>& env,
                                       const std::string& run_root = "/run");

// Listens at `path` with `mode` (0600 a user's, 0660 the system's), creating its directory (0700,
// or 0755 for the system's). A socket file nobody answers on (an agent killed) is replaced; one an
// agent answers on is left alone and refused: "another baton agent answers on PATH". Returns the
// listening descriptor (close-on-exec).
Result<int> listen_unix(const std::string& path, mode_t mode);

// Connects to `path`, after checking the socket belongs to root or to this user. Errors: "no baton
// agent at PATH", "PATH belongs to uid N, not to root or you: not talking to it".
Result<int> connect_unix(const std::string& path);

struct Peer {
    uid_t uid = 0;
    gid_t gid = 0;
    pid_t pid = 0;
};

// Who is connected on `fd` (SO_PEERCRED).
Result<Peer> peer_of(int fd);

}  // namespace baton::queue
