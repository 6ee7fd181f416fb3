// The live page's files, embedded at build time (src/serve/CMakeLists.txt): served under / and
// /assets/ with a Content-Security-Policy that lets the page reach nothing but this agent.
#pragma once

#include <optional>
#include <string_view>

namespace baton::serve {

struct Asset {
    std::string_view body;
    std::string_view content_type;
};

// The file at `path` ("/", "/assets/dashboard.js", "/assets/uPlot.min.js", ...), or nothing.
std::optional<Asset> find_asset(std::string_view path);

// The Content-Security-Policy of every page baton serve answers.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

}  // namespace baton::serve
