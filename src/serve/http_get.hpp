// One HTTP GET to a baton agent (`baton jobstats` asks each node's agent for a job): plain HTTP/1.0
// over TCP, the bearer token when one is given, bounded in time and size. Not a general client: no
// TLS, no redirects, no chunked encoding (HTTP/1.0 answers are never chunked).
#pragma once

#include <string>

#include "core/result.hpp"

namespace baton::serve {

struct HttpAnswer {
    int status = 0;
    std::string body;
};

// GET http://HOST:PORT/PATH (`url`; HOST a name, an IPv4 address or an IPv6 one in brackets). Errors:
// invalid_argument (not such a URL), unavailable (no connection), timed_out (no full answer within
// `timeout_seconds`), failed (not HTTP, or more than 64 MiB).
Result<HttpAnswer> http_get(const std::string& url, const std::string& token, double timeout_seconds);

}  // namespace baton::serve
