#include "profile/trace_events.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "core/text_parse.hpp"
#include "profile/byte_source.hpp"

namespace baton::profile {

namespace {

// The trace read in one pass over its bytes, a piece at a time: a JSON parser of its own (strict:
// RFC 8259's grammar, UTF-8 checked, the whole input consumed) that keeps only what an event needs
// and skips the rest without building it. nlohmann's SAX parser did the same at about a fifth of
// the speed (bench/profile_vs_json_load.py).
class TraceParser {
  public:
    TraceParser(ByteSource& source, const TraceLimits& limits) : source_(source), limits_(limits) {}

    Result<Trace> parse() {
        if (!top()) {
            if (!source_.error().empty()) return make_error(source_.error());
            return make_error(error_);
        }
        if (!found_events_) return make_error("not a profiler trace: no traceEvents array");
        if (!not_event_.empty())
            return make_error("not a profiler trace: its events array holds " + not_event_ + ", not event objects");
        // A bare array is the legacy profiler's only when its objects are events (each has "ph").
        if (trace_.legacy && objects_ > 0 && with_ph_ == 0)
            return make_error("not a profiler trace: an array of objects none of which is an event (no \"ph\")");
        return std::move(trace_);
    }

  private:
    // -- reading bytes --
    int peek() {
        if (p_ == end_ && !refill()) return -1;
        return static_cast<unsigned char>(*p_);
    }
    int get() {
        const int c = peek();
        if (c >= 0) ++p_;
        return c;
    }
    bool refill() {
        consumed_ += static_cast<std::size_t>(end_ - begin_);
        const std::string_view piece = source_.next();
        begin_ = p_ = piece.data();
        end_ = p_ + piece.size();
        return !piece.empty();
    }
    std::size_t offset() const { return consumed_ + static_cast<std::size_t>(p_ - begin_); }

    bool fail(const std::string& why) {
        if (error_.empty()) error_ = "not a trace's JSON at byte " + std::to_string(offset()) + " (" + why + ")";
        return false;
    }
    bool fail_at_end_or(const char* why) { return fail(peek() < 0 ? "unexpected end" : why); }
    void skip_ws() {
        for (;;) {
            while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
            if (p_ < end_ || !refill()) return;
        }
    }
    bool expect(char c) {
        skip_ws();
        if (peek() != static_cast<unsigned char>(c))
            return fail_at_end_or((std::string("expected '") + c + "'").c_str());
        ++p_;
        return true;
    }
    bool enter(std::size_t depth) {
        if (depth > limits_.max_depth) {
            error_ = "nested deeper than " + std::to_string(limits_.max_depth) + " levels";
            return false;
        }
        return true;
    }

    // -- values --
    // A string after its opening quote, into `out` when given. Escapes decoded, UTF-8 checked.
    bool string(std::string* out) {
        if (out) out->clear();
        for (;;) {
            // The run of plain bytes first, in one piece.
            const char* run = p_;
            while (p_ < end_) {
                const auto c = static_cast<unsigned char>(*p_);
                if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
                ++p_;
            }
            if (out) out->append(run, static_cast<std::size_t>(p_ - run));
            const int c = peek();
            if (c < 0) return fail("unexpected end in a string");
            if (c == '"') {
                ++p_;
                return true;
            }
            if (c >= 0x20 && c < 0x80 && c != '\\') continue;  // the run went on in the next piece
            if (c < 0x20) return fail("a control character in a string");
            if (c == '\\') {
                ++p_;
                if (!escape(out)) return false;
            } else if (!utf8(out)) {
                return false;
            }
        }
    }
    bool escape(std::string* out) {
        const int c = get();
        char plain = 0;
        switch (c) {
            case '"':
                plain = '"';
                break;
            case '\\':
                plain = '\\';
                break;
            case '/':
                plain = '/';
                break;
            case 'b':
                plain = '\b';
                break;
            case 'f':
                plain = '\f';
                break;
            case 'n':
                plain = '\n';
                break;
            case 'r':
                plain = '\r';
                break;
            case 't':
                plain = '\t';
                break;
            case 'u':
                return unicode_escape(out);
            default:
                return fail_at_end_or("an invalid escape");
        }
        if (out) out->push_back(plain);
        return true;
    }
    bool hex4(std::uint32_t& v) {
        v = 0;
        for (int i = 0; i < 4; ++i) {
            const int c = get();
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0) return fail_at_end_or("an invalid \\u escape");
            v = v * 16 + static_cast<std::uint32_t>(d);
        }
        return true;
    }
    bool unicode_escape(std::string* out) {
        std::uint32_t cp = 0;
        if (!hex4(cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("a lone low surrogate");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t low = 0;
            if (get() != '\\' || get() != 'u' || !hex4(low)) return fail_at_end_or("a lone high surrogate");
            if (low < 0xDC00 || low > 0xDFFF) return fail("a lone high surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (!out) return true;
        if (cp < 0x80) {
            out->push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
        return true;
    }
    // One UTF-8 sequence (its lead byte next): well-formed, shortest form, no surrogates, <= U+10FFFF.
    bool utf8(std::string* out) {
        const int lead = get();
        int more = 0;
        std::uint32_t cp = 0, min = 0;
        if (lead >= 0xC2 && lead <= 0xDF)
            more = 1, cp = static_cast<std::uint32_t>(lead & 0x1F), min = 0x80;
        else if (lead >= 0xE0 && lead <= 0xEF)
            more = 2, cp = static_cast<std::uint32_t>(lead & 0x0F), min = 0x800;
        else if (lead >= 0xF0 && lead <= 0xF4)
            more = 3, cp = static_cast<std::uint32_t>(lead & 0x07), min = 0x10000;
        else
            return fail("invalid UTF-8");
        char bytes[4] = {static_cast<char>(lead)};
        for (int i = 1; i <= more; ++i) {
            const int c = get();
            if (c < 0x80 || c > 0xBF) return fail_at_end_or("invalid UTF-8");
            bytes[i] = static_cast<char>(c);
            cp = (cp << 6) | static_cast<std::uint32_t>(c & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return fail("invalid UTF-8");
        if (out) out->append(bytes, static_cast<std::size_t>(more + 1));
        return true;
    }

    // Whether [first, last) is a number by JSON's grammar; `integral` when it has no fraction or exponent.
    static bool number_text(const char* first, const char* last, bool& integral) {
        const char* q = first;
        auto digits = [&]() {
            const char* from = q;
            while (q < last && *q >= '0' && *q <= '9') ++q;
            return q > from;
        };
        integral = true;
        if (q < last && *q == '-') ++q;
        if (q < last && *q == '0')
            ++q;
        else if (!digits())
            return false;
        if (q < last && *q == '.') {
            integral = false;
            ++q;
            if (!digits()) return false;
        }
        if (q < last && (*q == 'e' || *q == 'E')) {
            integral = false;
            ++q;
            if (q < last && (*q == '+' || *q == '-')) ++q;
            if (!digits()) return false;
        }
        return q == last;
    }
    static bool number_char(char c) {
        return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
    }
    // A number by JSON's grammar; with `want`, `d` its value and `i` as an integer (0 when no int64
    // holds it). Read in place when the number ends within the piece at hand (nearly always).
    bool number(double& d, std::int64_t& i, bool want = true) {
        const char* q = p_;
        while (q < end_ && number_char(*q)) ++q;
        const char *first = p_, *last = q;
        if (q == end_) {  // it may go on in the next piece: gathered byte by byte
            num_.clear();
            for (int c = peek(); c >= 0 && number_char(static_cast<char>(c)); c = peek())
                num_.push_back(static_cast<char>(get()));
            first = num_.data();
            last = first + num_.size();
        } else {
            p_ = q;
        }
        bool integral = true;
        if (!number_text(first, last, integral))
            return fail(first == last ? "unexpected character" : "an invalid number");
        if (!want) return true;
        if (integral) {
            std::int64_t v = 0;
            if (auto [ptr, ec] = std::from_chars(first, last, v); ec == std::errc{} && ptr == last) {
                d = static_cast<double>(v);
                i = v;
                return true;
            }
        }
        double v = 0;
        const auto [ptr, ec] = std::from_chars(first, last, v);
        const bool fits = ec == std::errc{} && ptr == last && std::isfinite(v) && std::fabs(v) < 9.2e18;
        if (integral && !fits && *first != '-') {  // a whole number past int64: the largest one
            d = static_cast<double>(INT64_MAX);
            i = INT64_MAX;
            return true;
        }
        d = fits ? v : 0;
        i = fits ? static_cast<std::int64_t>(v) : 0;
        return true;
    }
    bool literal(const char* word) {
        for (const char* w = word; *w; ++w)
            if (get() != static_cast<unsigned char>(*w)) return fail_at_end_or("an invalid literal");
        return true;
    }
    // Any value, read and dropped.
    bool skip(std::size_t depth) {
        skip_ws();
        const int c = peek();
        if (c == '"') {
            ++p_;
            return string(nullptr);
        }
        if (c == '{' || c == '[') {
            ++p_;
            if (!enter(depth + 1)) return false;
            const char close = c == '{' ? '}' : ']';
            skip_ws();
            if (peek() == close) {
                ++p_;
                return true;
            }
            for (;;) {
                if (c == '{') {
                    if (!expect('"') || !string(nullptr) || !expect(':')) return false;
                }
                if (!skip(depth + 1)) return false;
                skip_ws();
                const int n = get();
                if (n == close) return true;
                if (n != ',') return fail_at_end_or("expected ',' or a closing bracket");
            }
        }
        if (c == 't') return literal("true");
        if (c == 'f') return literal("false");
        if (c == 'n') return literal("null");
        if (c == '-' || (c >= '0' && c <= '9')) {
            double d = 0;
            std::int64_t i = 0;
            return number(d, i, /*want=*/false);
        }
        return fail_at_end_or("unexpected character");
    }

    // The members of an object after its '{', each given to `member` with its key (which reads the
    // value, or returns false).
    template <class F>
    bool members(F&& member) {
        skip_ws();
        if (peek() == '}') {
            ++p_;
            return true;
        }
        for (;;) {
            if (!expect('"') || !string(&key_) || !expect(':')) return false;
            skip_ws();
            if (!member(key_)) return false;
            skip_ws();
            const int n = get();
            if (n == '}') return true;
            if (n != ',') return fail_at_end_or("expected ',' or '}'");
        }
    }

    // -- the trace --
    bool top() {
        skip_ws();
        const int c = peek();
        if (c == '[') {
            trace_.legacy = true;
            found_events_ = true;
            ++p_;
            if (!enter(1) || !events(1)) return false;
        } else if (c == '{') {
            ++p_;
            if (!enter(1)) return false;
            const bool ok = members([&](const std::string& key) {
                if (key == "traceEvents" && peek() == '[') {
                    found_events_ = true;
                    ++p_;
                    return enter(2) && events(2);
                }
                if (key == "deviceProperties" && peek() == '[') {
                    ++p_;
                    return enter(2) && device_properties(2);
                }
                return skip(1);
            });
            if (!ok) return false;
        } else if (!skip(0)) {
            return false;
        }
        skip_ws();
        if (peek() >= 0) return fail("more after the trace's end");
        return source_.error().empty();
    }
    // The elements of an array after its '[', each given to `element` (which reads it, or returns false).
    template <class F>
    bool elements(F&& element) {
        skip_ws();
        if (peek() == ']') {
            ++p_;
            return true;
        }
        for (;;) {
            skip_ws();
            if (!element()) return false;
            skip_ws();
            const int n = get();
            if (n == ']') return true;
            if (n != ',') return fail_at_end_or("expected ',' or ']'");
        }
    }
    // The elements of the events array (at `depth`) after its '['.
    bool events(std::size_t depth) {
        return elements([&] {
            if (peek() == '{') {
                ++p_;
                ++objects_;
                return enter(depth + 1) && event(depth + 1);
            }
            // Something else where an event belongs (a number, an array, a string): not a trace,
            // whatever else the array holds; said once the whole text is known to be JSON.
            if (not_event_.empty()) not_event_ = value_kind(peek());
            return skip(depth);
        });
    }
    static std::string value_kind(int c) {
        if (c == '[') return "arrays";
        if (c == '"') return "strings";
        if (c == '-' || (c >= '0' && c <= '9')) return "numbers";
        return "literals";
    }
    // "deviceProperties": an array of objects, each read for its id, name and compute capability.
    bool device_properties(std::size_t depth) {
        return elements([&] {
            if (peek() != '{' || trace_.devices.size() >= 1024) return skip(depth);
            ++p_;
            DeviceProperties d;
            const bool ok =
                enter(depth + 1) && members([&](const std::string& key) {
                    const int c = peek();
                    if (c == '"' && key == "name") {
                        ++p_;
                        if (!string(&value_)) return false;
                        d.name = value_.substr(0, 256);
                        return true;
                    }
                    if ((c == '-' || (c >= '0' && c <= '9')) &&
                        (key == "id" || key == "computeMajor" || key == "computeMinor")) {
                        double v = 0;
                        std::int64_t i = 0;
                        if (!number(v, i)) return false;
                        const int small = i >= 0 && i < 1 << 20 ? static_cast<int>(i) : -1;
                        (key == "id" ? d.id : key == "computeMajor" ? d.compute_major : d.compute_minor) = small;
                        return true;
                    }
                    return skip(depth + 1);
                });
            if (ok) trace_.devices.push_back(std::move(d));
            return ok;
        });
    }
    void count_other_category(const std::string& cat) {
        for (auto& [name, count] : trace_.other_categories)
            if (name == cat) {
                ++count;
                return;
            }
        if (trace_.other_categories.size() < 32) trace_.other_categories.emplace_back(cat.substr(0, 64), 1);
    }

    // One event's members after its '{', at `depth`; kept when complete ("ph": "X").
    bool event(std::size_t depth) {
        TraceEvent e;
        bool named = false, range_kernel = false;
        ph_.clear();
        cat_.clear();
        const bool ok = members([&](const std::string& key) {
            const int c = peek();
            if (c == '"' && (key == "name" || key == "ph" || key == "cat" || key == "pid" || key == "tid")) {
                ++p_;
                if (!string(&value_)) return false;
                if (key == "name") {
                    e.name = intern(value_);
                    named = true;
                } else if (key == "ph") {
                    ph_ = value_.substr(0, 4);
                } else if (key == "cat") {
                    e.category = category_of(value_);
                    range_kernel = e.category == Category::kernel && text::ascii_lower(value_) == "cuda_profiler_range";
                    if (e.category == Category::other) cat_ = value_;
                } else {  // a string pid or tid ("CPU functions")
                    const auto h = static_cast<std::int64_t>(std::hash<std::string>{}(value_) >> 1);
                    (key == "pid" ? e.pid : e.tid) = h;
                }
                return true;
            }
            if ((c == '-' || (c >= '0' && c <= '9')) && (key == "ts" || key == "dur" || key == "pid" || key == "tid")) {
                double d = 0;
                std::int64_t i = 0;
                if (!number(d, i)) return false;
                if (key == "ts")
                    e.ts_us = d;
                else if (key == "dur")
                    e.dur_us = d < 0 ? 0 : d;
                else
                    (key == "pid" ? e.pid : e.tid) = i;
                return true;
            }
            if (c == '{' && key == "args") {
                ++p_;
                return enter(depth + 1) && args(e, depth + 1);
            }
            return skip(depth);
        });
        if (!ok) return false;
        if (!ph_.empty()) ++with_ph_;
        if (ph_ == "X" || (trace_.legacy && ph_.empty())) {
            if (trace_.events.size() >= limits_.max_events) {
                error_ = "more than " + std::to_string(limits_.max_events) + " events";
                return false;
            }
            if (!named) e.name = intern("");  // (found by fuzz_trace_events: no name, no index)
            if (trace_.legacy && e.category == Category::other) e.category = legacy_category(e);
            if (range_kernel) ++trace_.range_profiler_kernels;
            if (e.category == Category::other && !cat_.empty()) count_other_category(cat_);
            trace_.events.push_back(e);
        }
        return true;
    }
    bool args(TraceEvent& e, std::size_t depth) {
        return members([&](const std::string& key) {
            const int c = peek();
            if (c == '-' || (c >= '0' && c <= '9')) {
                const bool wanted = key == "correlation" || key == "External id" || key == "device" ||
                                    key == "stream" || key == "bytes";
                double d = 0;
                std::int64_t i = 0;
                if (!number(d, i, wanted)) return false;
                if (!wanted) return true;
                if (key == "correlation")
                    e.correlation = i;
                else if (key == "External id")
                    e.external_id = i;
                else if (key == "device")
                    e.device = i >= 0 && i < 1 << 20 ? static_cast<int>(i) : -1;
                else if (key == "stream")
                    e.stream = i;
                else if (key == "bytes")
                    e.bytes = i;
                return true;
            }
            if (c == '[' && key == "Input type") {  // its first string: the first input's type
                ++p_;
                if (!enter(depth + 1)) return false;
                skip_ws();
                if (peek() == ']') {
                    ++p_;
                    return true;
                }
                for (bool first = true;; first = false) {
                    skip_ws();
                    if (first && peek() == '"') {
                        ++p_;
                        if (!string(&value_)) return false;
                        if (!value_.empty()) e.input_type = intern(value_);
                    } else if (!skip(depth + 1)) {
                        return false;
                    }
                    skip_ws();
                    const int n = get();
                    if (n == ']') return true;
                    if (n != ',') return fail_at_end_or("expected ',' or ']'");
                }
            }
            if (c == '"' && key == "Call stack") {
                ++p_;
                if (!string(&value_)) return false;
                if (!value_.empty()) e.stack = intern(value_);
                return true;
            }
            return skip(depth);
        });
    }
    std::uint32_t intern(const std::string& s) {
        auto [it, fresh] = ids_.try_emplace(s, static_cast<std::uint32_t>(trace_.names.size()));
        if (fresh) trace_.names.push_back(s);
        return it->second;
    }
    // The legacy profiler has no categories: its events are the host's operators, and its step marks.
    Category legacy_category(const TraceEvent& e) const {
        return trace_.names[e.name].rfind("ProfilerStep#", 0) == 0 ? Category::user_annotation : Category::cpu_op;
    }

    ByteSource& source_;
    TraceLimits limits_;
    const char *begin_ = nullptr, *p_ = nullptr, *end_ = nullptr;
    std::size_t consumed_ = 0;
    Trace trace_;
    std::unordered_map<std::string, std::uint32_t> ids_;
    bool found_events_ = false;
    std::string key_, value_, ph_, cat_, num_, error_;
    std::string not_event_;                  // what stood where an event belongs ("numbers"), once
    std::size_t objects_ = 0, with_ph_ = 0;  // the events array's objects, and those with a "ph"
};

Result<Trace> parse_source(ByteSource source, const TraceLimits& limits) {
    TraceParser parser(source, limits);
    return parser.parse();
}

}  // namespace

Category category_of(std::string_view cat) {
    const std::string c = text::ascii_lower(cat.substr(0, 64));
    if (c == "cpu_op" || c == "operator") return Category::cpu_op;
    if (c == "user_annotation") return Category::user_annotation;
    if (c == "python_function") return Category::python_function;
    if (c == "cuda_runtime" || c == "runtime") return Category::cuda_runtime;
    if (c == "cuda_driver") return Category::cuda_driver;
    // CUPTI's range profiler records each kernel, replayed, under its own category.
    if (c == "kernel" || c == "cuda_profiler_range") return Category::kernel;
    if (c == "gpu_memcpy" || c == "memcpy") return Category::gpu_memcpy;
    if (c == "gpu_memset" || c == "memset") return Category::gpu_memset;
    if (c == "gpu_user_annotation") return Category::gpu_user_annotation;
    return Category::other;
}

Result<Trace> parse_trace(std::string_view json, const TraceLimits& limits) {
    return parse_source(ByteSource::of_text(json, limits.piece_bytes), limits);
}

Result<Trace> parse_trace_bytes(std::string_view bytes, const TraceLimits& limits) {
    return parse_source(ByteSource::of_bytes(bytes), limits);
}

Result<Trace> read_trace_file(const std::string& path, const TraceLimits& limits) {
    Result<ByteSource> source = ByteSource::of_file(path);
    if (!source.ok()) return source.error();
    Result<Trace> t = parse_source(std::move(*source), limits);
    if (!t.ok()) return make_error(path + ": " + t.error().message);
    return t;
}

}  // namespace baton::profile
