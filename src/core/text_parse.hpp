// Allocation-free helpers for the /proc text formats: the hot path parses with these
// instead of streams or std::stoul (design.md: "never allocate per field").
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace baton::text {

// Parses the unsigned decimal at the start of `s` (after leading blanks) and advances `s`
// past it. Returns nullopt, leaving `s` unchanged, when no digit is there.
std::optional<std::uint64_t> take_u64(std::string_view& s);

// Same, for a signed decimal.
std::optional<std::int64_t> take_i64(std::string_view& s);

// Same, for a decimal with an optional fraction ("12.34").
std::optional<double> take_double(std::string_view& s);

// Skips blanks (spaces and tabs) at the start of `s`.
void skip_blanks(std::string_view& s);

// Takes the next blank-separated word, advancing `s`; empty when none is left.
std::string_view take_word(std::string_view& s);

// Takes the next line (without its '\n'), advancing `s` past the newline.
std::string_view take_line(std::string_view& s);

// Whole-string parse: the text is exactly one unsigned decimal (surrounding blanks and a
// trailing newline allowed).
std::optional<std::uint64_t> parse_u64(std::string_view s);

// The one whole-string integer parser of the tree (ids, counts, ports, sizes in flags, files and replies):
// `s` is a run of ASCII digits, nothing else (no sign, no blanks, no '+'), whose value fits T. Anything else,
// overflow included, is nullopt, so a caller never needs std::stoi's exceptions or a hand loop's wrap-around.
template <class T>
std::optional<T> parse_digits(std::string_view s) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
    if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;  // from_chars would take '-'
    T v{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return v;
}

// Returns the value of "Key: value" lines such as /proc/meminfo's, for a line that starts
// with `key` followed by ':'; nullopt otherwise. The value is the text after the colon,
// blanks trimmed.
std::optional<std::string_view> value_after_key(std::string_view line, std::string_view key);

// "0-3,8,10-11" -> 0 1 2 3 8 10 11 (sysfs cpulist format), sorted, each once. Malformed parts are
// skipped; ranges are capped at CPU 65535.
std::vector<unsigned> parse_cpu_list(std::string_view text);

// A list of GPUs as users write one ("0-3", "0,2", "GPU-8f3a1c2d,GPU-77c1", "1,GPU-8f3a..."): each entry
// an index, a range of indices (at most 4096 GPUs) or a UUID (or a unique prefix of one, at least 8
// characters, as CUDA takes them), in the order given, each once; indices as decimal text. None
// when an entry is none of these; empty for an empty text.
std::optional<std::vector<std::string>> parse_gpu_list(std::string_view text);

// `s` with ASCII letters in lower case (other bytes as they are): names compared without case.
std::string ascii_lower(std::string_view s);

}  // namespace baton::text
