#include "profile/trace_events.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <functional>
#include <istream>
#include <memory>
#include <streambuf>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "core/text_parse.hpp"

namespace baton::profile {

namespace {

// The SAX handler: the containers' nesting, where the events array is, and the event being read.
class Reader {
  public:
    using json = nlohmann::json;
    explicit Reader(const TraceLimits& l) : limits_(l) {}

    bool null() { return value_none(); }
    bool boolean(bool) { return value_none(); }
    bool number_integer(json::number_integer_t v) { return value_number(static_cast<double>(v), v); }
    bool number_unsigned(json::number_unsigned_t v) {
        return value_number(static_cast<double>(v), v > INT64_MAX ? INT64_MAX : static_cast<std::int64_t>(v));
    }
    bool number_float(json::number_float_t v, const std::string&) {
        const bool fits = std::isfinite(v) && std::fabs(v) < 9.2e18;
        return value_number(fits ? v : 0, fits ? static_cast<std::int64_t>(v) : 0);
    }
    bool string(std::string& s) { return value_string(s); }
    bool binary(json::binary_t&) { return value_none(); }

    bool start_object(std::size_t) {
        if (!push(false)) return false;
        if (depth_ == 1) root_object_ = true;
        if (in_event_list() && depth_ == events_depth_ + 1) {
            event_ = TraceEvent{};
            ph_.clear();
            named_ = false;
            reading_event_ = true;
        }
        if (reading_event_ && depth_ == events_depth_ + 2 && key_ == "args") in_args_ = true;
        return true;
    }
    bool end_object() {
        if (reading_event_ && depth_ == events_depth_ + 2) in_args_ = false;
        if (reading_event_ && depth_ == events_depth_ + 1) {
            reading_event_ = false;
            if (ph_ == "X" || (trace_.legacy && ph_.empty())) {
                if (trace_.events.size() >= limits_.max_events) {
                    error_ = "more than " + std::to_string(limits_.max_events) + " events";
                    return false;
                }
                if (!named_) event_.name = intern("");  // (found by fuzz_trace_events: no name, no index)
                if (trace_.legacy && event_.category == Category::other) event_.category = legacy_category();
                trace_.events.push_back(event_);
            }
        }
        --depth_;
        key_.clear();
        return true;
    }
    bool start_array(std::size_t) {
        if (!push(true)) return false;
        if (depth_ == 1) {
            trace_.legacy = true;  // a bare array of events
            events_depth_ = 1;
            found_events_ = true;
        } else if (depth_ == 2 && root_object_ && key_ == "traceEvents") {
            events_depth_ = 2;
            found_events_ = true;
        }
        return true;
    }
    bool end_array() {
        if (depth_ == events_depth_) events_depth_ = 0;
        --depth_;
        key_.clear();
        return true;
    }
    bool key(std::string& k) {
        key_ = k;
        return true;
    }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
        error_ = "not a trace's JSON at byte " + std::to_string(position) + " (" + first_line(e.what()) + ")";
        return false;
    }

    Trace take() { return std::move(trace_); }
    const std::string& error() const { return error_; }
    bool found_events() const { return found_events_; }

  private:
    static std::string first_line(std::string s) {
        if (std::size_t at = s.find("]: "); at != std::string::npos) s = s.substr(at + 3);
        return s.substr(0, s.find('\n')).substr(0, 200);
    }
    bool push(bool) {
        if (++depth_ > limits_.max_depth) {
            error_ = "nested deeper than " + std::to_string(limits_.max_depth) + " levels";
            return false;
        }
        return true;
    }
    bool in_event_list() const { return events_depth_ > 0; }
    // A value directly in the event (depth events+1) or in its args (events+2).
    bool at_event() const { return reading_event_ && depth_ == events_depth_ + 1; }
    bool at_args() const { return reading_event_ && in_args_ && depth_ == events_depth_ + 2; }

    bool value_none() {
        key_.clear();
        return true;
    }
    bool value_number(double d, std::int64_t i) {
        if (at_event()) {
            if (key_ == "ts")
                event_.ts_us = d;
            else if (key_ == "dur")
                event_.dur_us = d < 0 ? 0 : d;
            else if (key_ == "pid")
                event_.pid = i;
            else if (key_ == "tid")
                event_.tid = i;
        } else if (at_args()) {
            if (key_ == "correlation")
                event_.correlation = i;
            else if (key_ == "External id")
                event_.external_id = i;
            else if (key_ == "device")
                event_.device = i >= 0 && i < 1 << 20 ? static_cast<int>(i) : -1;
            else if (key_ == "stream")
                event_.stream = i;
            else if (key_ == "bytes")
                event_.bytes = i;
        }
        key_.clear();
        return true;
    }
    bool value_string(const std::string& s) {
        if (at_event()) {
            if (key_ == "name") {
                event_.name = intern(s);
                named_ = true;
            } else if (key_ == "ph")
                ph_ = s.substr(0, 4);
            else if (key_ == "cat")
                event_.category = category_of(s);
            else if (key_ == "pid")
                event_.pid = static_cast<std::int64_t>(std::hash<std::string>{}(s) >> 1);
            else if (key_ == "tid")
                event_.tid = static_cast<std::int64_t>(std::hash<std::string>{}(s) >> 1);
        } else if (at_args() && key_ == "Call stack" && !s.empty()) {
            event_.stack = intern(s);
        }
        key_.clear();
        return true;
    }
    std::uint32_t intern(const std::string& s) {
        auto [it, fresh] = ids_.try_emplace(s, static_cast<std::uint32_t>(trace_.names.size()));
        if (fresh) trace_.names.push_back(s);
        return it->second;
    }
    // The legacy profiler has no categories: its events are the host's operators, and its step marks.
    Category legacy_category() const {
        const std::string& n = trace_.names.empty() ? std::string() : trace_.names[event_.name];
        return n.rfind("ProfilerStep#", 0) == 0 ? Category::user_annotation : Category::cpu_op;
    }

    TraceLimits limits_;
    Trace trace_;
    std::unordered_map<std::string, std::uint32_t> ids_;
    std::size_t depth_ = 0, events_depth_ = 0;
    bool root_object_ = false, reading_event_ = false, in_args_ = false, found_events_ = false, named_ = false;
    std::string key_, ph_, error_;
    TraceEvent event_;
};

}  // namespace

const char* category_name(Category c) {
    switch (c) {
        case Category::cpu_op:
            return "cpu_op";
        case Category::user_annotation:
            return "user_annotation";
        case Category::python_function:
            return "python_function";
        case Category::cuda_runtime:
            return "cuda_runtime";
        case Category::cuda_driver:
            return "cuda_driver";
        case Category::kernel:
            return "kernel";
        case Category::gpu_memcpy:
            return "gpu_memcpy";
        case Category::gpu_memset:
            return "gpu_memset";
        case Category::gpu_user_annotation:
            return "gpu_user_annotation";
        case Category::other:
            return "other";
    }
    return "other";
}

Category category_of(std::string_view cat) {
    const std::string c = text::ascii_lower(cat.substr(0, 64));
    if (c == "cpu_op" || c == "operator") return Category::cpu_op;
    if (c == "user_annotation") return Category::user_annotation;
    if (c == "python_function") return Category::python_function;
    if (c == "cuda_runtime" || c == "runtime") return Category::cuda_runtime;
    if (c == "cuda_driver") return Category::cuda_driver;
    if (c == "kernel") return Category::kernel;
    if (c == "gpu_memcpy" || c == "memcpy") return Category::gpu_memcpy;
    if (c == "gpu_memset" || c == "memset") return Category::gpu_memset;
    if (c == "gpu_user_annotation") return Category::gpu_user_annotation;
    return Category::other;
}

namespace {

Result<Trace> finish(Reader& r, bool ok) {
    if (!ok) return make_error(r.error().empty() ? "not a trace's JSON" : r.error());
    if (!r.found_events()) return make_error("not a profiler trace: no traceEvents array");
    return r.take();
}

// A gzFile as a stream buffer (zlib reads a plain file through unchanged), so the SAX parser pulls
// the file a buffer at a time.
class GzBuffer : public std::streambuf {
  public:
    explicit GzBuffer(gzFile f) : file_(f) {}
    ~GzBuffer() override { gzclose(file_); }
    GzBuffer(const GzBuffer&) = delete;
    GzBuffer& operator=(const GzBuffer&) = delete;
    // zlib's message when the stream broke (truncated, corrupt), else "".
    std::string error() const { return error_; }

  protected:
    int_type underflow() override {
        if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
        const int n = gzread(file_, buffer_, sizeof buffer_);
        if (n <= 0) {
            int code = Z_OK;
            const char* msg = gzerror(file_, &code);
            if (n < 0 || (code != Z_OK && code != Z_BUF_ERROR))
                error_ = code == Z_ERRNO ? std::strerror(errno) : (msg ? msg : "gzip error");
            else if (code == Z_BUF_ERROR)
                error_ = "the gzip stream ends early (truncated)";
            return traits_type::eof();
        }
        setg(buffer_, buffer_, buffer_ + n);
        return traits_type::to_int_type(*gptr());
    }

  private:
    gzFile file_;
    char buffer_[1 << 18];
    std::string error_;
};

// Gzipped bytes in memory, inflated a buffer at a time.
class InflateBuffer : public std::streambuf {
  public:
    explicit InflateBuffer(std::string_view gz) {
        zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
        zs_.avail_in = static_cast<uInt>(std::min<std::size_t>(gz.size(), UINT32_MAX));
        ok_ = inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK;  // 16: the gzip wrapper
        if (!ok_) error_ = "cannot start zlib";
    }
    ~InflateBuffer() override {
        if (ok_) inflateEnd(&zs_);
    }
    InflateBuffer(const InflateBuffer&) = delete;
    InflateBuffer& operator=(const InflateBuffer&) = delete;
    std::string error() const { return error_; }

  protected:
    int_type underflow() override {
        if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
        if (!ok_ || ended_) return traits_type::eof();
        zs_.next_out = reinterpret_cast<Bytef*>(buffer_);
        zs_.avail_out = sizeof buffer_;
        const int rc = inflate(&zs_, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            ended_ = true;
        } else if (rc != Z_OK) {
            error_ = rc == Z_BUF_ERROR ? "the gzip stream ends early (truncated)"
                                       : std::string("a broken gzip stream (") + (zs_.msg ? zs_.msg : "zlib") + ")";
            ok_ = false;
        }
        const std::size_t n = sizeof buffer_ - zs_.avail_out;
        if (n == 0) return traits_type::eof();
        setg(buffer_, buffer_, buffer_ + n);
        return traits_type::to_int_type(*gptr());
    }

  private:
    z_stream zs_{};
    bool ok_ = false, ended_ = false;
    char buffer_[1 << 18];
    std::string error_;
};

}  // namespace

Result<Trace> parse_trace_bytes(std::string_view bytes, const TraceLimits& limits) {
    if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f ||
        static_cast<unsigned char>(bytes[1]) != 0x8b)
        return parse_trace(bytes, limits);
    auto buffer = std::make_unique<InflateBuffer>(bytes);
    std::istream in(buffer.get());
    Reader r(limits);
    const bool ok = nlohmann::json::sax_parse(in, &r, nlohmann::json::input_format_t::json, /*strict=*/true);
    if (!buffer->error().empty()) return make_error(buffer->error());
    return finish(r, ok);
}

Result<Trace> parse_trace(std::string_view json, const TraceLimits& limits) {
    Reader r(limits);
    const bool ok = nlohmann::json::sax_parse(json.begin(), json.end(), &r, nlohmann::json::input_format_t::json,
                                              /*strict=*/true);
    return finish(r, ok);
}

Result<Trace> read_trace_file(const std::string& path, const TraceLimits& limits) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return make_error(errno == ENOENT   ? ErrorCode::not_found
                          : errno == EACCES ? ErrorCode::permission_denied
                                            : ErrorCode::failed,
                          "cannot read " + path + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return make_error(path + " is not a regular file");
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) return make_error(ErrorCode::failed, "cannot read " + path + ": " + std::strerror(errno ? errno : EIO));
    auto buffer = std::make_unique<GzBuffer>(f);
    std::istream in(buffer.get());
    Reader r(limits);
    const bool ok = nlohmann::json::sax_parse(in, &r, nlohmann::json::input_format_t::json, /*strict=*/true);
    if (!buffer->error().empty()) return make_error(path + ": " + buffer->error());
    Result<Trace> t = finish(r, ok);
    if (!t.ok()) return make_error(path + ": " + t.error().message);
    return t;
}

}  // namespace baton::profile
