// The socket the Python hook sends its events to: a Unix datagram socket in a private directory
// (mode 0700, so only this user's processes can write to it), named to the command through
// BATON_EVENTS. The directory is in $XDG_RUNTIME_DIR when set (per user, emptied at logout), else
// $TMPDIR or /tmp, and named after its baton (pid and start time): one left by a killed baton is
// removed by the next one of the same user. Reading never blocks; the kernel's queue is the only buffer, so a hook that
// sends faster than baton reads loses events on its side (and counts them), never waits.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace baton::run {

class EventsSocket {
  public:
    static Result<EventsSocket> open();
    // The same socket at `path`, in a directory the caller made private (a queued job's own):
    // removed on destruction, the directory left alone.
    static Result<EventsSocket> open_at(const std::string& path);
    EventsSocket(EventsSocket&& other) noexcept;
    EventsSocket& operator=(EventsSocket&&) = delete;
    ~EventsSocket();  // closes, and removes the socket and its directory (with what else is in it)

    const std::string& path() const { return path_; }
    // The private directory open() made (the job's stack handler goes there too); "" after open_at.
    const std::string& directory() const { return dir_; }
    // Where the directory goes.
    static std::string base_directory();
    // Removes the directories in `base` left by this user's batons that are gone (open() does).
    static void remove_stale(const std::string& base);
    // Every datagram waiting, at most `max` of them.
    std::vector<std::string> drain(std::size_t max = 4096);

  private:
    EventsSocket() = default;
    int fd_ = -1;
    std::string dir_, path_;
};

}  // namespace baton::run
