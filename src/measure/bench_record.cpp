#include "measure/bench_record.hpp"
#include "store/history_bench.hpp"

namespace baton::measure {

std::vector<store::BenchLinkRecord> link_records(const std::vector<BenchReport>& reports) {
    std::vector<store::BenchLinkRecord> links;
    for (const BenchReport& r : reports)
        for (const LinkResult& l : r.links)
            links.push_back({r.bench, l.link, l.measured, l.peak, l.need, l.peak_source, l.verdict, l.detail, l.unit});
    return links;
}

Result<std::int64_t> record_bench(const std::string& db_path, const BenchRecord& record,
                                  const std::vector<BenchReport>& reports) {
    Result<store::History> h = store::History::open(db_path, store::HistoryAccess::record);
    if (!h.ok()) return h.error();
    const std::string label = record.what.empty() ? "bench" : "bench " + record.what;
    return h->bench_table().record_bench(record.name.empty() ? label : record.name, "baton " + label, record.cwd,
                                         record.host, record.start_ms, record.end_ms, record.text,
                                         link_records(reports));
}

}  // namespace baton::measure
