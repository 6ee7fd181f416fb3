// A streaming JSON writer into one reusable std::string. The snapshot is written field by
// field without building a DOM: at ten snapshots a second with a thousand processes, a DOM
// would cost more than reading /proc does. Output is compact (no spaces) and valid UTF-8
// (invalid bytes in strings, e.g. from a process's command line, become U+FFFD).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

class JsonWriter {
  public:
    explicit JsonWriter(std::string& out) : out_(out) {}

    void begin_object();
    void end_object();
    void begin_array();
    void end_array();

    // Starts a member of the current object; the next value call writes its value.
    // `k` must not need escaping (baton's keys are ASCII identifiers).
    void key(std::string_view k);

    void value(std::string_view s);
    void value(const char* s) { value(std::string_view(s)); }
    void value(bool b);
    void value(std::int64_t v);
    void value(std::uint64_t v);
    void value(int v) { value(static_cast<std::int64_t>(v)); }
    void value(unsigned v) { value(static_cast<std::uint64_t>(v)); }
    // Non-finite doubles are written as null: JSON has no NaN.
    void value(double v);
    void null();

    // key + value, skipping the member entirely when the optional is empty: absent, never 0.
    template <typename T>
    void field(std::string_view k, const T& v) {
        key(k);
        value(v);
    }
    template <typename T>
    void optional_field(std::string_view k, const std::optional<T>& v) {
        if (!v) return;
        key(k);
        value(*v);
    }

    // Appends `s` as a quoted, escaped JSON string.
    static void append_escaped(std::string& out, std::string_view s);

  private:
    void separator();

    std::string& out_;
    bool need_comma_ = false;
};

}  // namespace baton
