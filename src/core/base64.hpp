// Base64 (RFC 4648, with padding): the queue's arguments on its socket, jobstats' JS1 summaries.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace baton {

std::string base64_encode(std::string_view bytes);
// None for anything that is not padded base64 (no whitespace, '=' only at the end).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace baton
