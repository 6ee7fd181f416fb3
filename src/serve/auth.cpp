#include "serve/auth.hpp"

#include "sample/linux/kept_file.hpp"

namespace baton::serve {

Result<std::string> read_token_file(const std::string& path) {
    os::ReadBuffer buf;
    if (!os::read_file(path, buf)) return make_error("cannot read the token file " + path);
    std::string_view t = buf;
    if (t.size() > 4096) return make_error("the token file " + path + " is larger than 4 KiB");
    t = t.substr(0, t.find('\n'));
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
    if (t.empty()) return make_error("the token file " + path + " is empty");
    return std::string(t);
}

Result<std::string> asker_token(const std::string& given, const std::string& fallback) {
    if (!given.empty()) return read_token_file(given);
    if (fallback.empty()) return std::string();
    Result<std::string> t = read_token_file(fallback);
    return t.ok() ? t : Result<std::string>(std::string());
}

bool bearer_matches(std::string_view authorization, std::string_view token) {
    constexpr std::string_view kScheme = "Bearer ";
    if (token.empty() || authorization.size() < kScheme.size()) return false;
    // The scheme is case-insensitive (RFC 7235); it is no secret, so an early return is fine.
    for (std::size_t i = 0; i < kScheme.size(); ++i)
        if ((authorization[i] | 0x20) != (kScheme[i] | 0x20)) return false;
    const std::string_view given = authorization.substr(kScheme.size());
    unsigned char diff = given.size() == token.size() ? 0 : 1;
    for (std::size_t i = 0; i < given.size(); ++i)
        diff |= static_cast<unsigned char>(given[i] ^ token[i % token.size()]);
    return diff == 0;
}

}  // namespace baton::serve
