// The bearer token of baton serve: read from a file, compared in constant time.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace baton::serve {

// The token in `path`: its first line, without surrounding blanks. An error when the file cannot
// be read, is empty, or is larger than 4 KiB (a token, not a document).
Result<std::string> read_token_file(const std::string& path);

// The token a command that asks agents sends: `given` (a flag or a key the user set: unreadable is an
// error), else `fallback` (a default such as [serve] token_file, which may be root's alone:
// unreadable means none), else none ("").
Result<std::string> asker_token(const std::string& given, const std::string& fallback);

// Whether an Authorization header value is "Bearer TOKEN" with this token. The time it takes
// depends on the lengths only, not on where the first wrong byte is.
bool bearer_matches(std::string_view authorization, std::string_view token);

}  // namespace baton::serve
