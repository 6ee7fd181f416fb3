// The answer reader of baton's HTTP client: every way an answer's end is said (Content-Length,
// chunked, the close), fed whole and a byte at a time, and hostile answers refused with a reason.
#include <gtest/gtest.h>

#include "serve/http_response.hpp"

using baton::serve::ResponseReader;
using State = ResponseReader::State;

namespace {

// Feeds `text` in pieces of `step` bytes; finishes with the close when `close`.
ResponseReader read(const std::string& text, std::size_t step, bool close = false, bool head_only = false) {
    ResponseReader r(head_only);
    for (std::size_t at = 0; at < text.size() && r.state() == State::incomplete; at += step)
        r.feed(std::string_view(text).substr(at, step));
    if (close) r.finish();
    return r;
}

}  // namespace

TEST(HttpResponse, ContentLengthWholeAndByteByByte) {
    const std::string a = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
    for (std::size_t step : {a.size(), std::size_t{1}, std::size_t{3}}) {
        ResponseReader r = read(a, step);
        ASSERT_EQ(r.state(), State::complete) << step;
        EXPECT_EQ(r.status(), 200);
        EXPECT_EQ(r.body(), "{\"a\":1}");
        EXPECT_TRUE(r.keep_alive());
    }
}

TEST(HttpResponse, ChunkedWithExtensionsAndTrailers) {
    const std::string a =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: yes\r\n\r\n";
    for (std::size_t step : {a.size(), std::size_t{1}, std::size_t{7}}) {
        ResponseReader r = read(a, step);
        ASSERT_EQ(r.state(), State::complete) << step << " " << r.error();
        EXPECT_EQ(r.body(), "Wikipedia in\r\n\r\nchunks.");
        EXPECT_TRUE(r.keep_alive());
    }
}

TEST(HttpResponse, ABodyToTheCloseEndsWithIt) {
    const std::string a = "HTTP/1.0 200 OK\r\n\r\nall of it";
    ResponseReader r = read(a, 2);
    EXPECT_EQ(r.state(), State::incomplete);
    EXPECT_EQ(r.finish(), State::complete);
    EXPECT_EQ(r.body(), "all of it");
    EXPECT_FALSE(r.keep_alive());
}

TEST(HttpResponse, WhetherTheConnectionStays) {
    EXPECT_FALSE(read("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 100).keep_alive());
    EXPECT_FALSE(read("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 100).keep_alive());
    EXPECT_TRUE(read("HTTP/1.0 200 OK\r\nconnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", 100).keep_alive());
    EXPECT_FALSE(
        read("HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n", 100).keep_alive());
}

TEST(HttpResponse, InterimAnswersAreSkippedAndHeadHasNoBody) {
    ResponseReader r = read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno", 5);
    ASSERT_EQ(r.state(), State::complete);
    EXPECT_EQ(r.status(), 404);
    EXPECT_EQ(r.body(), "no");
    ResponseReader head = read("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", 100, false, true);
    EXPECT_EQ(head.state(), State::complete);
    EXPECT_EQ(read("HTTP/1.1 204 No Content\r\n\r\n", 100).state(), State::complete);
}

TEST(HttpResponse, HostileAnswersAreRefusedWithAReason) {
    const std::pair<std::string, std::string> bad[] = {
        {"SSH-2.0-OpenSSH_9.2\r\n\r\n", "not an HTTP/1.x answer"},
        {"HTTP/2 200\r\n\r\n", "not an HTTP/1.x answer"},
        {"HTTP/1.1 2x0 OK\r\n\r\n", "not an HTTP/1.x answer"},
        {"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "NAME: VALUE"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "Content-Length"},
        {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", "Content-Length"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n", "over 64 MiB"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "not chunked"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not hex"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffff\r\n", "not hex"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8000000\r\n", "over 64 MiB"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY", "CRLF"},
        {"HTTP/1.1 200 OK\r\nX: " + std::string(70000, 'a'), "over 64 KiB"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(5000, '1'), "over 4 KiB"},
    };
    for (const auto& [answer, why] : bad) {
        for (std::size_t step : {answer.size(), std::size_t{1}}) {
            ResponseReader r = read(answer, step);
            EXPECT_EQ(r.state(), State::bad) << answer.substr(0, 60);
            EXPECT_NE(r.error().find(why), std::string::npos) << r.error();
            EXPECT_FALSE(r.keep_alive());
        }
    }
}

TEST(HttpResponse, ACloseBeforeTheEndIsSaidAsSuch) {
    ResponseReader none;
    EXPECT_EQ(none.finish(), State::bad);
    EXPECT_EQ(none.error(), "the connection closed without an answer");
    EXPECT_FALSE(none.started());
    ResponseReader cut = read("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 100, true);
    EXPECT_EQ(cut.state(), State::bad);
    EXPECT_EQ(cut.error(), "the answer was cut short");
    EXPECT_TRUE(cut.started());
}

TEST(HttpResponse, ManyTinyChunksAreReadInLinearTime) {
    // 1 MiB of one-byte chunks, fed in 64 KiB reads: no re-scan of what was read already.
    std::string a = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < (1 << 20); ++i) a += "1\r\nx\r\n";
    a += "0\r\n\r\n";
    ResponseReader r = read(a, 65536);
    ASSERT_EQ(r.state(), State::complete);
    EXPECT_EQ(r.body().size(), 1u << 20);
}
