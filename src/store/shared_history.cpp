#include "store/shared_history.hpp"

namespace baton::store {

Status SharedHistory::use(const std::function<Status(History&)>& write) {
    MutexLock lock(mutex_);
    if (!history_) {
        Result<History> h = History::open(path_, HistoryAccess::record);
        if (!h.ok()) return h.error();
        history_.emplace(std::move(*h));
    }
    return write(*history_);
}

}  // namespace baton::store
