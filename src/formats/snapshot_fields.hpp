// The Snapshot's scalar fields, each written once: its JSON key, its member, its Prometheus
// family (name, type, scale, help), its dcgm-exporter twin and whether baton serve keeps it over
// time. The JSON writer and reader, the Prometheus exposition, --dcgm-compat and the agent's
// metric history all walk these tables, and a test (tests/formats/snapshot_fields_test.cpp) fails
// when docs/snapshot-schema.md or docs/metrics.md disagree with them. So adding a GPU field is:
// the member in sample/snapshot.hpp, the NVML read, one row here, one row in each doc.
//
// What is not here is what has a shape of its own: arrays and nested objects (throttle reasons,
// MIG instances, a GPU's processes, per-core CPU times, pressure), identity fields that are
// labels rather than values (a GPU's index and uuid, a disk's name), and the processes, whose
// JSON is the hot path of `baton snapshot` and keeps its cached, hand-written encoder
// (formats/snapshot_json.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sample/snapshot.hpp"
#include "formats/prometheus_text.hpp"

namespace baton {
class JsonWriter;
}

namespace baton::formats {

// dcgm-exporter's framebuffer families, which --dcgm-compat writes for each GPU (its field rows) and
// for each MIG instance (dcgm_compat.cpp).
inline constexpr MetricFamily kDcgmFbUsed{"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."};
inline constexpr MetricFamily kDcgmFbFree{"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."};

// A member of record R that holds one scalar. std::optional: absent when unknown (the JSON key
// is left out; docs say "optional"); a plain member is always written. An enum is written as its
// name (core/enum_names.hpp) and a name it does not know is refused on reading.
template <class R>
using FieldMember = std::variant<double R::*, std::uint64_t R::*, unsigned R::*, bool R::*, std::string R::*,
                                 GpuProcessType R::*, std::optional<double> R::*, std::optional<std::uint64_t> R::*,
                                 std::optional<unsigned> R::*, std::optional<bool> R::*,
                                 std::optional<std::string> R::*, std::optional<ComputeMode> R::*, GpuState R::*>;

// One Prometheus family a field is exported as; name null: not exported this way.
struct FieldMetric {
    const char* name = nullptr;
    const char* type = "gauge";  // or "counter"
    double scale = 1.0;          // the field's unit to the metric's: percent -> ratio 0.01, MHz -> Hz 1e6
    const char* help = "";
    // One more label, when two fields are one family (baton_gpu_remapped_rows{cause=...}).
    const char* label = nullptr;
    const char* label_value = nullptr;
};

template <class R>
struct Field {
    const char* key;  // the JSON key within the record (docs/snapshot-schema.md)
    FieldMember<R> member;
    FieldMetric metric{};   // baton's own family on /metrics and in snapshot --prometheus
    FieldMetric dcgm[2]{};  // dcgm-exporter's families for --dcgm-compat (GPU utilisation has two)
    // Kept by baton serve over time (its ring and the history database), named
    // "<history prefix>.<key>" (docs/api.md).
    bool history = false;
    // A plain member that recordings made before baton wrote it lack: read as its default.
    bool lenient = false;
    std::uint64_t max = 0;  // the largest value a reader accepts (0: the type's largest)
};

// A record's table, with where its rows live in the docs and the metric history.
template <class R>
struct FieldTable {
    const char* doc_prefix;      // "gpus[]." : the schema doc's key for a row is doc_prefix + key
    const char* history_prefix;  // "gpu" : the metric history's name is history_prefix + "." + key
    std::span<const Field<R>> fields;
};

const FieldTable<Snapshot>& snapshot_fields();  // the top level's scalars
const FieldTable<HostInfo>& host_fields();
const FieldTable<CpuTimes>& cpu_time_fields();  // cpu and cpu.cores[] alike (cores: JSON only)
const FieldTable<CpuStats>& cpu_fields();
const FieldTable<MemoryStats>& memory_fields();
const FieldTable<SwapStats>& swap_fields();
const FieldTable<DiskStats>& disk_fields();
const FieldTable<FilesystemStats>& filesystem_fields();
const FieldTable<NetworkStats>& network_fields();
const FieldTable<GpuInfo>& gpu_fields();
const FieldTable<GpuProcess>& gpu_process_fields();

namespace field_detail {
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class P>
struct MemberType;
template <class R, class T>
struct MemberType<T R::*> {
    using type = T;  // `double R::*` -> double
};

template <class T>
const char* json_type_of() {
    if constexpr (IsOptional<T>::value) {
        return json_type_of<typename T::value_type>();
    } else if constexpr (std::is_same_v<T, double>) {
        return "number";
    } else if constexpr (std::is_same_v<T, bool>) {
        return "boolean";
    } else if constexpr (std::is_same_v<T, std::string> || std::is_enum_v<T>) {
        return "string";
    } else {
        return "integer";
    }
}

template <class T>
std::optional<double> as_number(const T& v) {
    if constexpr (IsOptional<T>::value) {
        if (!v) return std::nullopt;
        return as_number(*v);
    } else if constexpr (std::is_same_v<T, std::string> || std::is_enum_v<T>) {
        return std::nullopt;
    } else if constexpr (std::is_same_v<T, bool>) {
        return v ? 1.0 : 0.0;
    } else {
        return static_cast<double>(v);
    }
}
}  // namespace field_detail

// The JSON type a member is written as: "number", "integer", "boolean" or "string".
template <class R>
const char* json_type(const FieldMember<R>& m) {
    return std::visit(
        [](auto p) { return field_detail::json_type_of<typename field_detail::MemberType<decltype(p)>::type>(); }, m);
}

// Whether its key may be absent (std::optional).
template <class R>
bool is_optional(const FieldMember<R>& m) {
    return std::visit(
        [](auto p) { return field_detail::IsOptional<typename field_detail::MemberType<decltype(p)>::type>::value; },
        m);
}

// The field's value as a number for metrics (booleans 1 or 0); nullopt when unknown, a string or a name.
template <class R>
std::optional<double> numeric_value(const R& r, const FieldMember<R>& m) {
    return std::visit([&](auto p) { return field_detail::as_number(r.*p); }, m);
}

// Writes every field of `r` as members of the object being written (unknown ones left out).
template <class R>
void write_fields(JsonWriter& w, const FieldTable<R>& t, const R& r);

// Declares the families of the table's fields (`dcgm`: dcgm-exporter's instead of baton's).
template <class R>
void declare_families(Exposition& e, const FieldTable<R>& t, bool dcgm = false);
// One sample per known field of `r`, with `labels` (and a field's own label).
template <class R>
void sample_fields(Exposition& e, const FieldTable<R>& t, const R& r,
                   const std::vector<std::pair<const char*, std::string>>& labels, bool dcgm = false);

}  // namespace baton::formats
