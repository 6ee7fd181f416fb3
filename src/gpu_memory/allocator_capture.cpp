#include "gpu_memory/allocator_capture.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sys/stat.h>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)
#include <nlohmann/json.hpp>

namespace baton::gpu_memory {

namespace {

using nlohmann::json;

// A capture's bounds: far above what the hook writes (it trims stacks to 32 frames and keeps the last
// [memory] history_events events), low enough that a hostile file cannot make baton hold gigabytes.
constexpr std::size_t kMaxSegments = 1u << 20, kMaxBlocks = 4u << 20, kMaxTraces = 1u << 20;
constexpr std::size_t kMaxFrames = 64, kMaxText = 4096, kMaxTensors = 4u << 20;

struct Bad {
    std::string message;
};

[[noreturn]] void bad(const std::string& where, const char* what) {
    throw Bad{where + ": " + what};
}

std::uint64_t unsigned_of(const json& v, const std::string& where) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    bad(where, "expected a non-negative integer");
}

std::int64_t integer_of(const json& v, const std::string& where) {
    if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX))
        return v.get<std::int64_t>();
    bad(where, "expected an integer");
}

std::string text_of(const json& v, const std::string& where) {
    if (!v.is_string()) bad(where, "expected a string");
    const std::string& s = v.get_ref<const std::string&>();
    return s.size() > kMaxText ? s.substr(0, kMaxText) : s;
}

const json* member(const json& o, const char* key) {
    const auto it = o.find(key);
    return it == o.end() || it->is_null() ? nullptr : &*it;
}

std::optional<std::uint64_t> optional_unsigned(const json& o, const char* key, const std::string& where) {
    const json* v = member(o, key);
    return v ? std::optional(unsigned_of(*v, where + "." + key)) : std::nullopt;
}

const json& object_at(const json& o, const char* key, const std::string& where) {
    const json* v = member(o, key);
    if (!v || !v->is_object()) bad(where + "." + key, "expected an object");
    return *v;
}

const json* array_or_none(const json& o, const char* key, const std::string& where) {
    const json* v = member(o, key);
    if (v && !v->is_array()) bad(where + "." + key, "expected an array");
    return v;
}

// Stacks are kept once each (the same few stacks allocate most blocks): index into `stacks`.
class Stacks {
  public:
    explicit Stacks(std::vector<Stack>& out) : out_(out) {}
    std::int32_t add(const json* frames, const std::string& where) {
        if (!frames) return -1;
        if (!frames->is_array()) bad(where, "expected an array of frames");
        if (frames->empty()) return -1;
        Stack s;
        std::string key;
        for (std::size_t i = 0; i < frames->size() && s.size() < kMaxFrames; ++i) {
            const json& f = (*frames)[i];
            const std::string at = fmt::format("{}[{}]", where, i);
            if (!f.is_object()) bad(at, "expected a frame object");
            Frame fr;
            if (const json* v = member(f, "filename")) fr.filename = text_of(*v, at + ".filename");
            if (const json* v = member(f, "name")) fr.name = text_of(*v, at + ".name");
            if (const json* v = member(f, "line"))
                fr.line = static_cast<int>(std::clamp<std::int64_t>(integer_of(*v, at + ".line"), -1, INT32_MAX));
            key += fr.filename + '\n' + fr.name + '\n' + std::to_string(fr.line) + '\n';
            s.push_back(std::move(fr));
        }
        const auto [it, fresh] = index_.emplace(std::move(key), static_cast<std::int32_t>(out_.size()));
        if (fresh) out_.push_back(std::move(s));
        return it->second;
    }

  private:
    std::vector<Stack>& out_;
    std::map<std::string, std::int32_t> index_;
};

void read_tensors(const json& o, const char* key, std::vector<KnownTensor>& out, std::size_t& total) {
    const std::string where = std::string("tensors.") + key;
    const json* list = array_or_none(o, key, "tensors");
    if (!list) return;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const json& t = (*list)[i];
        const std::string at = fmt::format("{}[{}]", where, i);
        if (!t.is_array() || t.size() != 2) bad(at, "expected [address, bytes]");
        if (++total > kMaxTensors) bad(where, "too many tensors");
        out.push_back({unsigned_of(t[0], at), unsigned_of(t[1], at)});
    }
}

void read_segments(const json& snap, OomCapture& c, Stacks& stacks) {
    const json* segments = array_or_none(snap, "segments", "snapshot");
    if (!segments) return;
    if (segments->size() > kMaxSegments) bad("snapshot.segments", "too many segments");
    std::size_t blocks = 0;
    for (std::size_t i = 0; i < segments->size(); ++i) {
        const json& s = (*segments)[i];
        const std::string at = fmt::format("snapshot.segments[{}]", i);
        if (!s.is_object()) bad(at, "expected an object");
        if (const json* d = member(s, "device"); d && unsigned_of(*d, at + ".device") != c.device) continue;
        Segment seg;
        seg.address = optional_unsigned(s, "address", at).value_or(0);
        seg.total_size = optional_unsigned(s, "total_size", at).value_or(0);
        seg.allocated_size = optional_unsigned(s, "allocated_size", at).value_or(0);
        seg.active_size = optional_unsigned(s, "active_size", at).value_or(0);
        seg.stream = optional_unsigned(s, "stream", at).value_or(0);
        if (const json* t = member(s, "segment_type")) seg.large = text_of(*t, at + ".segment_type") != "small";
        std::uint64_t offset = seg.address;
        if (const json* list = array_or_none(s, "blocks", at))
            for (std::size_t j = 0; j < list->size(); ++j) {
                const json& b = (*list)[j];
                const std::string bat = fmt::format("{}.blocks[{}]", at, j);
                if (!b.is_object()) bad(bat, "expected an object");
                if (++blocks > kMaxBlocks) bad("snapshot.segments", "too many blocks");
                Block blk;
                blk.size = optional_unsigned(b, "size", bat).value_or(0);
                blk.requested_size = optional_unsigned(b, "requested_size", bat).value_or(blk.size);
                // Older PyTorch lists a segment's blocks in address order without their addresses.
                blk.address = optional_unsigned(b, "address", bat).value_or(offset);
                offset = blk.address + blk.size;
                const json* state = member(b, "state");
                if (!state) bad(bat + ".state", "missing");
                const std::string name = text_of(*state, bat + ".state");
                // 1.x and 2.0 called the awaiting state "active_pending_free".
                if (name == "active_pending_free")
                    blk.state = BlockState::active_awaiting_free;
                else if (const std::optional<BlockState> st = enum_from_name<BlockState>(name))
                    blk.state = *st;
                else
                    bad(bat + ".state", "expected active_allocated, active_awaiting_free or inactive");
                if (blk.state != BlockState::inactive) blk.stack = stacks.add(member(b, "frames"), bat + ".frames");
                seg.blocks.push_back(std::move(blk));
            }
        c.segments.push_back(std::move(seg));
    }
}

void read_traces(const json& snap, OomCapture& c, Stacks& stacks) {
    const json* per_device = array_or_none(snap, "device_traces", "snapshot");
    if (!per_device || per_device->size() <= c.device) return;
    const json& list = (*per_device)[c.device];
    const std::string where = fmt::format("snapshot.device_traces[{}]", c.device);
    if (!list.is_array()) bad(where, "expected an array");
    if (list.size() > kMaxTraces) bad(where, "too many trace entries");
    for (std::size_t i = 0; i < list.size(); ++i) {
        const json& t = list[i];
        const std::string at = fmt::format("{}[{}]", where, i);
        if (!t.is_object()) bad(at, "expected an object");
        TraceEntry e;
        if (const json* a = member(t, "action"))
            e.action = enum_from_name<TraceAction>(text_of(*a, at + ".action")).value_or(TraceAction::other);
        e.addr = optional_unsigned(t, "addr", at).value_or(0);
        e.size = optional_unsigned(t, "size", at).value_or(0);
        e.stream = optional_unsigned(t, "stream", at).value_or(0);
        e.device_free = optional_unsigned(t, "device_free", at);
        e.stack = stacks.add(member(t, "frames"), at + ".frames");
        c.traces.push_back(e);
    }
}

OomCapture read_capture(const json& j) {
    if (!j.is_object()) bad("capture", "expected a JSON object");
    const json* format = member(j, "baton_oom_capture");
    if (!format) bad("capture", "not a baton OOM capture (no \"baton_oom_capture\" key)");
    if (integer_of(*format, "baton_oom_capture") != 1) bad("baton_oom_capture", "only version 1 is known");
    OomCapture c;
    c.pid = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(optional_unsigned(j, "pid", "capture").value_or(0), UINT32_MAX));
    if (const json* v = member(j, "rank"))
        c.rank = static_cast<int>(std::clamp<std::int64_t>(integer_of(*v, "rank"), 0, 1 << 20));
    c.device =
        static_cast<unsigned>(std::min<std::uint64_t>(optional_unsigned(j, "device", "capture").value_or(0), 1023));
    if (const json* v = member(j, "t")) {
        // Range-checked before the conversion: unix ms up to the end of the year 9999.
        if (!v->is_number() || !(v->get<double>() >= 0 && v->get<double>() <= 253402300799999.0))
            bad("t", "expected a number of unix ms up to the year 9999");
        c.t_ms = static_cast<std::int64_t>(v->get<double>());
    }
    if (const json* v = member(j, "torch")) c.torch_version = text_of(*v, "torch");
    if (const json* v = member(j, "step")) c.step = integer_of(*v, "step");
    if (const json* v = member(j, "batch_size")) c.batch_size = integer_of(*v, "batch_size");
    if (const json* v = member(j, "phase"))
        c.phase = enum_from_name<StepPhase>(text_of(*v, "phase")).value_or(StepPhase::other);
    if (const json* v = member(j, "autocast")) {
        if (!v->is_boolean()) bad("autocast", "expected true or false");
        c.autocast = v->get<bool>();
    }
    if (const json* v = member(j, "history")) {
        if (!v->is_boolean()) bad("history", "expected true or false");
        c.history = v->get<bool>();
    }
    c.requested_bytes = optional_unsigned(j, "requested_bytes", "capture");
    c.device_total_bytes = optional_unsigned(j, "device_total_bytes", "capture");
    c.device_free_bytes = optional_unsigned(j, "device_free_bytes", "capture");
    if (const json* v = member(j, "message")) c.message = text_of(*v, "message");
    if (const json* v = member(j, "stats")) {
        if (!v->is_object()) bad("stats", "expected an object");
        AllocatorStats& s = c.stats;
        s.allocated = optional_unsigned(*v, "allocated_bytes", "stats").value_or(0);
        s.reserved = optional_unsigned(*v, "reserved_bytes", "stats").value_or(0);
        s.active = optional_unsigned(*v, "active_bytes", "stats").value_or(0);
        s.inactive_split = optional_unsigned(*v, "inactive_split_bytes", "stats").value_or(0);
        s.peak_allocated = optional_unsigned(*v, "peak_allocated_bytes", "stats").value_or(0);
        s.num_ooms = optional_unsigned(*v, "num_ooms", "stats").value_or(0);
        s.num_alloc_retries = optional_unsigned(*v, "num_alloc_retries", "stats").value_or(0);
    }
    if (const json* v = member(j, "tensors")) {
        if (!v->is_object()) bad("tensors", "expected an object");
        std::size_t total = 0;
        read_tensors(*v, "parameters", c.parameters, total);
        read_tensors(*v, "gradients", c.gradients, total);
        read_tensors(*v, "optimizer_state", c.optimizer_state, total);
    }
    Stacks stacks(c.stacks);
    if (const json* v = member(j, "stack")) {
        const std::int32_t i = stacks.add(v, "stack");
        if (i >= 0) c.failure_stack = c.stacks[static_cast<std::size_t>(i)];
    }
    if (member(j, "snapshot")) {
        const json& snap = object_at(j, "snapshot", "capture");
        read_segments(snap, c, stacks);
        read_traces(snap, c, stacks);
    }
    return c;
}

}  // namespace

Result<OomCapture> parse_oom_capture(std::string_view text) {
    if (text.size() > kMaxCaptureBytes)
        return make_error(
            fmt::format("the capture is {} bytes, more than the {} baton reads", text.size(), kMaxCaptureBytes));
    json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return make_error("the capture is not valid JSON (cut short, or not a capture)");
    try {
        return read_capture(j);
    } catch (const Bad& b) {
        return make_error("the capture's " + b.message);
    }
}

Result<OomCapture> read_oom_capture(const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return make_error(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) return make_error(path + " is not a regular file");
    if (static_cast<std::uint64_t>(st.st_size) > kMaxCaptureBytes)
        return make_error(fmt::format("{} is {} bytes, more than the {} baton reads of a capture", path, st.st_size,
                                      kMaxCaptureBytes));
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) return make_error("cannot read " + path);
    Result<OomCapture> c = parse_oom_capture(text);
    if (!c.ok()) return make_error(path + ": " + c.error().message);
    return c;
}

}  // namespace baton::gpu_memory
