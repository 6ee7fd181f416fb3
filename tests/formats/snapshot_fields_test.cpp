// The field tables (formats/snapshot_fields.cpp) against the docs: each field's JSON key, type and
// presence in docs/snapshot-schema.md, each Prometheus family with its type in docs/metrics.md,
// each dcgm-exporter twin in its table there (mapped from this very key), each kept metric in
// docs/api.md. And the other way: every scalar row the schema documents for a tabled record is
// a table row (or one of the shaped keys the writers spell by hand). So the docs and the code
// cannot drift apart, whichever side a change starts on.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "formats/snapshot_fields.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::formats;

namespace {

std::string read_doc(const std::string& name) {
    std::ifstream in(baton::test::source_dir() + "/docs/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

struct SchemaRow {
    std::string type;
    std::string presence;
};

// | `path` | type | always/optional | meaning |
std::map<std::string, SchemaRow> schema_rows() {
    std::istringstream in(read_doc("snapshot-schema.md"));
    std::map<std::string, SchemaRow> out;
    const std::regex row(R"(^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|\s*(always|optional)\s*\|)");
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, row)) out[m[1]] = {m[2], m[3]};
    return out;
}

// The names of a metrics.md row's first cell: `baton_gpu_memory_total_bytes`, `_used_bytes` is
// two names (a name starting with `_` replaces as many trailing words of the first one).
std::vector<std::string> row_names(const std::string& cell) {
    std::vector<std::string> names;
    const std::regex name("`([A-Za-z_][A-Za-z0-9_]*)`");
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), name); it != std::sregex_iterator(); ++it) {
        std::string n = (*it)[1];
        if (n.front() == '_' && !names.empty()) {
            const std::size_t words = static_cast<std::size_t>(std::count(n.begin(), n.end(), '_'));
            std::string stem = names.front();
            for (std::size_t i = 0; i < words; ++i) stem = stem.substr(0, stem.rfind('_'));
            n = stem + n;
        }
        names.push_back(n);
    }
    return names;
}

struct MetricRow {
    std::string type;
    std::string rest;  // the cells after the type
};

// | metric(s) | type | ... |, from every table of docs/metrics.md.
std::map<std::string, MetricRow> metric_rows() {
    std::istringstream in(read_doc("metrics.md"));
    std::map<std::string, MetricRow> out;
    const std::regex row(R"(^\|([^|]+)\|\s*(gauge|counter)\s*\|(.*)$)");
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, row))
            for (const std::string& n : row_names(m[1])) out[n] = {m[2], m[3]};
    return out;
}

// `gpus[].memory_{used,free,reserved}_bytes` -> the three keys it names.
std::set<std::string> expand_braces(const std::string& text) {
    std::set<std::string> out;
    const std::regex key(R"(`([a-z_.\[\]]*)\{([a-z_,]+)\}([a-z_]*)`|`([a-z_.\[\]]+)`)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), key); it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        if (m[4].matched) {
            out.insert(m[4]);
            continue;
        }
        std::stringstream alternatives(m[2]);
        std::string a;
        while (std::getline(alternatives, a, ',')) out.insert(std::string(m[1]) + a + std::string(m[3]));
    }
    return out;
}

template <class R>
void check_table(const FieldTable<R>& t, const std::map<std::string, SchemaRow>& schema,
                 const std::map<std::string, MetricRow>& metrics, const std::string& api,
                 const std::vector<std::string>& doc_prefixes) {
    std::set<std::string> keys;
    for (const Field<R>& f : t.fields) {
        EXPECT_TRUE(keys.insert(f.key).second) << t.doc_prefix << f.key << " is in its table twice";
        for (const std::string& prefix : doc_prefixes) {
            const std::string path = prefix + f.key;
            auto row = schema.find(path);
            if (row == schema.end()) {
                ADD_FAILURE() << path << " is in formats/snapshot_fields.cpp but not in docs/snapshot-schema.md";
                continue;
            }
            EXPECT_EQ(row->second.type, json_type(f.member)) << path << ": the doc's type";
            EXPECT_EQ(row->second.presence, is_optional(f.member) ? "optional" : "always") << path;
        }
        if (f.metric.name) {
            auto m = metrics.find(f.metric.name);
            if (m == metrics.end())
                ADD_FAILURE() << f.metric.name << " (from " << t.doc_prefix << f.key << ") is not in docs/metrics.md";
            else
                EXPECT_EQ(m->second.type, f.metric.type) << f.metric.name << ": the doc's type";
            EXPECT_NE(json_type(f.member), std::string("string")) << f.key << ": a string is no metric";
        }
        for (const FieldMetric& d : f.dcgm) {
            if (!d.name) continue;
            auto m = metrics.find(d.name);
            if (m == metrics.end()) {
                ADD_FAILURE() << d.name << " is not in docs/metrics.md's dcgm-exporter table";
                continue;
            }
            EXPECT_EQ(m->second.type, d.type) << d.name;
            EXPECT_TRUE(expand_braces(m->second.rest).count(t.doc_prefix + std::string(f.key)))
                << "docs/metrics.md maps " << d.name << " from another key than " << t.doc_prefix << f.key << ": "
                << m->second.rest;
        }
        if (f.history) {
            const std::string name = std::string(t.history_prefix) + "." + f.key;
            EXPECT_NE(api.find("`" + name + "`"), std::string::npos) << name << " is kept but not in docs/api.md";
        }
    }
    // The other way: the schema's rows directly under the record are table rows, or shaped keys.
    static const std::set<std::string> by_hand = {
        // identity and labels
        "gpus[].index", "gpus[].uuid", "gpus[].name", "gpus[].pci_bus_id", "gpus[].lost", "disks[].name",
        "networks[].name", "filesystems[].mount_point", "filesystems[].writer_pids",
        // arrays and objects
        "gpus[].throttle_reasons", "gpus[].mig_instances", "gpus[].xid_errors", "gpus[].processes", "cpu.seconds_total",
        "cpu.load_average", "cpu.cores", "cpu.cores[].id", "cpu.cores[].seconds_total", "schema_version", "time",
        "host", "cpu", "memory", "swap", "pressure", "disks", "networks", "gpus", "processes", "jobs", "filesystems"};
    for (const std::string& prefix : doc_prefixes)
        for (const auto& [path, row] : schema) {
            if (path.rfind(prefix, 0) != 0) continue;
            const std::string rest = path.substr(prefix.size());
            if (rest.find_first_of(".[") != std::string::npos) continue;  // deeper: another record
            if (by_hand.count(path)) continue;
            bool tabled = keys.count(rest) > 0;
            // cpu. holds two records' rows (CpuTimes and CpuStats): the caller checks both tables.
            if (!tabled && prefix == "cpu.") {
                for (const auto& f : cpu_time_fields().fields) tabled |= rest == f.key;
                for (const auto& f : cpu_fields().fields) tabled |= rest == f.key;
            }
            EXPECT_TRUE(tabled) << path << " is documented but in no field table (formats/snapshot_fields.cpp)";
        }
}

}  // namespace

TEST(SnapshotFields, EveryTableAgreesWithTheDocs) {
    const auto schema = schema_rows();
    const auto metrics = metric_rows();
    const std::string api = read_doc("api.md");
    ASSERT_GT(schema.size(), 100u) << "docs/snapshot-schema.md tables not found";
    ASSERT_GT(metrics.size(), 60u) << "docs/metrics.md tables not found";
    ASSERT_TRUE(metrics.count("baton_gpu_memory_used_bytes")) << "a `_suffix` name is not expanded";
    check_table(snapshot_fields(), schema, metrics, api, {""});
    check_table(host_fields(), schema, metrics, api, {"host."});
    check_table(cpu_time_fields(), schema, metrics, api, {"cpu.", "cpu.cores[]."});
    check_table(cpu_fields(), schema, metrics, api, {"cpu."});
    check_table(memory_fields(), schema, metrics, api, {"memory."});
    check_table(swap_fields(), schema, metrics, api, {"swap."});
    check_table(disk_fields(), schema, metrics, api, {"disks[]."});
    check_table(filesystem_fields(), schema, metrics, api, {"filesystems[]."});
    check_table(network_fields(), schema, metrics, api, {"networks[]."});
    check_table(gpu_fields(), schema, metrics, api, {"gpus[]."});
    check_table(gpu_process_fields(), schema, metrics, api, {"gpus[].processes[]."});
}

// The test above must be able to fail: a wrong type, a missing row and a metric that is not in
// the docs each make check_table report.
TEST(SnapshotFields, TheDocCheckBites) {
    struct Fake {
        std::optional<double> utilization_percent;
        std::uint64_t nowhere_bytes = 0;
    };
    const Field<Fake> rows[] = {
        Field<Fake>{.key = "utilization_percent",
                    .member = &Fake::utilization_percent,
                    .metric = {"baton_no_such_metric", "gauge", 1, ""}},
        Field<Fake>{.key = "nowhere_bytes", .member = &Fake::nowhere_bytes},
    };
    const FieldTable<Fake> t{"gpus[].", "gpu", std::span(rows)};
    const auto schema = schema_rows();
    const auto metrics = metric_rows();
    std::vector<std::string> failures;
    {
        ::testing::TestPartResultArray results;
        ::testing::ScopedFakeTestPartResultReporter reporter(
            ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
        check_table(t, schema, metrics, read_doc("api.md"), {"gpus[]."});
        for (int i = 0; i < results.size(); ++i) failures.push_back(results.GetTestPartResult(i).message());
    }
    auto reported = [&](const std::string& what) {
        for (const std::string& f : failures)
            if (f.find(what) != std::string::npos) return true;
        return false;
    };
    EXPECT_TRUE(reported("baton_no_such_metric")) << "a metric missing from docs/metrics.md";
    EXPECT_TRUE(reported("gpus[].nowhere_bytes is in formats/snapshot_fields.cpp")) << "a key missing from the schema";
    EXPECT_TRUE(reported("gpus[].power_watts is documented but in no field table")) << "a documented key not tabled";
}

// What the tables drive, end to end on one record: written, read back, exported.
TEST(SnapshotFields, NumericValuesFollowTheMember) {
    GpuInfo g;
    g.power_watts = 250.5;
    g.remapping_pending = true;
    g.compute_mode = ComputeMode::shared;
    for (const Field<GpuInfo>& f : gpu_fields().fields) {
        const std::optional<double> v = numeric_value(g, f.member);
        const std::string key = f.key;
        if (key == "power_watts") {
            EXPECT_EQ(v, 250.5);
        } else if (key == "remapping_pending") {
            EXPECT_EQ(v, 1.0);
        } else if (key == "compute_mode") {
            EXPECT_FALSE(v) << "a string has no numeric value";
        } else if (key == "temperature_celsius") {
            EXPECT_FALSE(v) << "unknown stays unknown";
        } else if (key == "stale") {
            EXPECT_EQ(v, 0.0) << "a plain bool is always a value";
        }
    }
}
