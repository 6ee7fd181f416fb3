// gzip in memory (zlib, linked statically): jobstats' JS1 summaries are base64 of gzipped JSON.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

// A gzip member (RFC 1952) holding `bytes`, at zlib's default level.
std::string gzip_compress(std::string_view bytes);

// What a gzip (or zlib) stream holds; none when it is not one, is cut short, or would exceed
// `max_bytes` (a small input that inflates to gigabytes is refused, not followed).
std::optional<std::string> gzip_decompress(std::string_view bytes, std::size_t max_bytes);

}  // namespace baton
