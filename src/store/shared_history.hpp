// One connection to the run history shared by many recorders (history_writer.hpp) of one process:
// the queue's agent records each running job's run, and a connection of its own per job would
// parse the schema, take the migration's write lock and look for interrupted runs at every start,
// most of a short job's cost to the agent (docs/performance.md, the queue). The connection opens
// at its first use and again after it could not; one recorder uses it at a time.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "core/thread_safety.hpp"
#include "store/history.hpp"

namespace baton::store {

class SharedHistory {
  public:
    explicit SharedHistory(std::string path) : path_(std::move(path)) {}
    SharedHistory(const SharedHistory&) = delete;
    SharedHistory& operator=(const SharedHistory&) = delete;

    const std::string& path() const { return path_; }
    // `write` on the connection, opened first if need be; the open's error when it cannot be.
    Status use(const std::function<Status(History&)>& write);

  private:
    const std::string path_;
    Mutex mutex_;
    std::optional<History> history_ BATON_GUARDED_BY(mutex_);
};

}  // namespace baton::store
