// The hook's socket: private, non-blocking, every datagram drained whole, gone afterwards.
#include <gtest/gtest.h>

#include <filesystem>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "run/events_socket.hpp"
#include "store/hook_event.hpp"

using namespace baton;
using namespace baton::store;
using namespace baton::run;

namespace {

void send_to(const std::string& path, const std::string& text) {
    const int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    ASSERT_EQ(sendto(fd, text.data(), text.size(), 0, reinterpret_cast<const sockaddr*>(&addr), sizeof addr),
              static_cast<ssize_t>(text.size()));
    close(fd);
}

}  // namespace

TEST(EventsSocket, DrainsEveryDatagramWholeAndCleansUp) {
    std::string path, dir;
    {
        auto s = EventsSocket::open();
        ASSERT_TRUE(s.ok()) << s.error().message;
        path = s->path();
        dir = std::filesystem::path(path).parent_path();
        struct stat st {};
        ASSERT_EQ(stat(dir.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0700u);  // only this user can reach the socket
        EXPECT_TRUE(s->drain().empty());      // nothing yet: returns at once
        send_to(path, "one");
        send_to(path, "two");
        send_to(path, std::string(kMaxHookEventBytes + 500, 'x'));
        auto got = s->drain();
        ASSERT_EQ(got.size(), 3u);
        EXPECT_EQ(got[0], "one");
        EXPECT_EQ(got[1], "two");
        EXPECT_GT(got[2].size(), kMaxHookEventBytes);  // kept long enough to be refused as too long
        EXPECT_FALSE(parse_hook_event(got[2]).ok());
        for (int i = 0; i < 10; ++i) send_to(path, "e");
        EXPECT_EQ(s->drain(4).size(), 4u);  // bounded per call
        EXPECT_EQ(s->drain().size(), 6u);
    }
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(dir));
}
