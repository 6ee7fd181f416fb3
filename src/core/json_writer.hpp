// A streaming JSON writer appending to one reusable std::string. The snapshot is written
// field by field without building a DOM: at ten snapshots a second with a thousand
// processes, a DOM would cost more than reading /proc does. The writer keeps its own write
// position and grows the string in large steps, so each key and number is a plain memcpy
// or to_chars into place (std::string::append per small piece cost more than the rest of
// the JSON view together). Output is compact and valid UTF-8: invalid bytes in strings,
// e.g. from a process's command line, become U+FFFD.
//
// The string holds spare bytes past the written text until finish() (or the destructor)
// trims it: read `out` only after either. Once finished, the writer leaves the string alone (text
// appended after finish() survives the destructor) until it writes again.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

class JsonWriter {
  public:
    explicit JsonWriter(std::string& out) : out_(out), pos_(out.size()) {}
    ~JsonWriter() { finish(); }
    JsonWriter(const JsonWriter&) = delete;
    JsonWriter& operator=(const JsonWriter&) = delete;

    // Trims the string to the text written so far. Idempotent; writing may continue after.
    void finish() {
        if (!spare_) return;
        out_.resize(pos_);
        spare_ = false;
    }

    void begin_object();
    void end_object();
    void begin_array();
    void end_array();

    // Starts a member of the current object; the next value call writes its value.
    // `k` must not need escaping (baton's keys are ASCII identifiers).
    template <std::size_t N>
    void key(const char (&k)[N]) {
        key_bytes(k, N - 1);  // literal: the length is a constant and the copy inlines
    }
    void key(std::string_view k) { key_bytes(k.data(), k.size()); }

    void value(std::string_view s);
    void value(const char* s) { value(std::string_view(s)); }
    void value(bool b);
    void value(std::int64_t v);
    void value(std::uint64_t v);
    void value(int v) { value(static_cast<std::int64_t>(v)); }
    void value(unsigned v) { value(static_cast<std::uint64_t>(v)); }
    // Rounded to three decimals; integral values print without a fraction; non-finite
    // values are written as null (JSON has no NaN).
    void value(double v);
    void null();

    // key + value.
    template <std::size_t N, typename T>
    void field(const char (&k)[N], const T& v) {
        key(k);
        value(v);
    }
    // key + value, skipping the member entirely when the optional is empty: absent, never 0.
    template <std::size_t N, typename T>
    void optional_field(const char (&k)[N], const std::optional<T>& v) {
        if (!v) return;
        key(k);
        value(*v);
    }

    // Writes already-encoded members (`"a":1,"b":"x"`, from another JsonWriter) into the
    // current object, as if each had been written here.
    void members(std::string_view encoded) {
        if (encoded.empty()) return;
        separator();
        put(encoded.data(), encoded.size());
    }

    // Writes `s` as a quoted, escaped JSON string.
    void escaped(std::string_view s);
    // Appends `s` to `out` as a quoted, escaped JSON string.
    static void append_escaped(std::string& out, std::string_view s);

  private:
    // Room for `n` more bytes at pos_.
    char* room(std::size_t n) {
        if (pos_ + n > out_.size()) grow(n);
        return out_.data() + pos_;
    }
    void put(const char* p, std::size_t n) {
        std::memcpy(room(n), p, n);
        pos_ += n;
    }
    void put(char c) {
        *room(1) = c;
        ++pos_;
    }
    void grow(std::size_t n);
    void separator() {
        if (need_comma_) put(',');
        need_comma_ = true;
    }
    void key_bytes(const char* k, std::size_t n);

    std::string& out_;
    std::size_t pos_;
    bool need_comma_ = false;
    bool spare_ = false;  // grow() added bytes past pos_ that finish() must trim
};

}  // namespace baton
