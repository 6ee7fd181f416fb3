// GET /api/v1/history and /api/v1/runs[/ID] (docs/api.md): the machine's metrics over time, from
// memory for the last minutes and from the history database beyond, and the recorded runs.
#pragma once

#include <cstdint>

#include "serve/http_server.hpp"
#include "serve/metric_history.hpp"
#include "store/history.hpp"

namespace baton::serve {

struct HistorySources {
    const MetricHistory* memory = nullptr;
    store::History* store = nullptr;  // null: no database (then only memory)
    double interval_seconds = 1;      // the sampling interval (the finest step)
    std::int64_t now_ms = 0;
};

HttpResponse history_response(const HttpRequest& r, const HistorySources& sources);

// /api/v1/runs and /api/v1/runs/ID; `store` may be null (404: no database).
HttpResponse runs_response(const HttpRequest& r, store::History* store);

}  // namespace baton::serve
