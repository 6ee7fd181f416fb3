// Reading one HTTP/1.x answer as its bytes come (baton's clients of agents: `baton jobstats`,
// `baton snapshot --hosts`, `baton top --hosts`). Pure: no socket, so hostile answers are unit tests
// and a fuzzer. The body's end is what the answer says: Content-Length, chunked transfer encoding,
// or the connection closing; the connection is kept only when the answer allows it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace baton::serve {

class ResponseReader {
  public:
    enum class State { incomplete, complete, bad };
    static constexpr std::size_t kMaxHead = 64u << 10;
    static constexpr std::size_t kMaxBody = 64u << 20;

    // `head_only`: the answer to a HEAD request (no body whatever its headers say).
    explicit ResponseReader(bool head_only = false) : head_only_(head_only) {}

    // Takes the next bytes. complete: status() and body() hold the answer, and bytes past its end
    // (there should be none: one request at a time) are ignored; bad: error() says why.
    State feed(std::string_view bytes);
    // The connection closed: completes an answer whose body runs to the close, else it is bad
    // (cut short; no bytes at all is said as such).
    State finish();

    State state() const { return state_; }
    int status() const { return status_; }
    const std::string& body() const { return body_; }
    std::string take_body() { return std::move(body_); }
    // After complete: the connection may carry the next request (HTTP/1.1 without "Connection:
    // close", HTTP/1.0 with "Connection: keep-alive", and a body whose end was not the close).
    bool keep_alive() const { return keep_alive_; }
    const std::string& error() const { return error_; }
    bool started() const { return started_; }  // any byte came

  private:
    enum class Part { head, fixed, chunk_size, chunk_data, chunk_data_end, trailer, to_close, done };
    State fail(std::string why);
    State parse_head(std::size_t head_end);
    State step();

    bool head_only_;
    State state_ = State::incomplete;
    Part part_ = Part::head;
    std::string buffer_;  // bytes not consumed yet
    std::size_t scanned_ = 0;
    int status_ = 0;
    bool keep_alive_ = false;
    bool started_ = false;
    std::size_t left_ = 0;  // bytes of the body (fixed) or of the chunk still to come
    std::string body_;
    std::string error_;
};

}  // namespace baton::serve
