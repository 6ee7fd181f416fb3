// An agent's answer to baton's HTTP client (anything may listen at a host:port a user names): read
// whole and in the pieces the input's first byte chooses, the two readings agree, a complete answer
// keeps to the limits, and a bad one says why.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serve/http_response.hpp"

using baton::serve::ResponseReader;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::size_t step = 1 + data[0] % 17;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    ResponseReader whole, pieces;
    whole.feed(text);
    for (std::size_t at = 0; at < text.size() && pieces.state() == ResponseReader::State::incomplete; at += step)
        pieces.feed(text.substr(at, step));
    if (whole.state() != pieces.state()) std::abort();
    whole.finish();
    pieces.finish();
    if (whole.state() != pieces.state() || whole.body() != pieces.body() || whole.status() != pieces.status())
        std::abort();
    if (whole.state() == ResponseReader::State::complete &&
        (whole.status() < 200 || whole.status() > 999 || whole.body().size() > ResponseReader::kMaxBody ||
         whole.body().size() > text.size()))
        std::abort();
    if (whole.state() == ResponseReader::State::bad && (whole.error().empty() || whole.keep_alive())) std::abort();
    return 0;
}
