// The bearer token of baton serve: read from a file, compared in constant time.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace baton::serve {

// The token in `path`: its first line, without surrounding blanks. An error when the file cannot
// be read, is empty, or is larger than 4 KiB (a token, not a document).
Result<std::string> read_token_file(const std::string& path);

// Whether an Authorization header value is "Bearer TOKEN" with this token. The time it takes
// depends on the lengths only, not on where the first wrong byte is.
bool bearer_matches(std::string_view authorization, std::string_view token);

}  // namespace baton::serve
