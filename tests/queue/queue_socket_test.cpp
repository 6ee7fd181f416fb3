// The queue's Unix socket on real sockets: where clients look, who the kernel says is connected,
// an agent killed (its socket replaced) or still answering (refused), and sockets a client must not
// talk to.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "queue/queue_socket.hpp"
#include "test_support.hpp"

using namespace baton::queue;

TEST(QueueSocket, PlacesToLook) {
    auto p = socket_places({{"XDG_RUNTIME_DIR", "/run/user/1000"}});
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].path, "/run/baton/baton.sock");
    EXPECT_TRUE(p[0].system);
    EXPECT_EQ(p[1].path, "/run/user/1000/baton/baton.sock");
    EXPECT_FALSE(p[1].system);
    EXPECT_EQ(socket_places({}).size(), 1u);
    EXPECT_EQ(socket_places({{"XDG_RUNTIME_DIR", "relative/dir"}}).size(), 1u) << "a relative runtime dir is ignored";
}

TEST(QueueSocket, TheKernelSaysWhoIsConnected) {
    baton::test::TempDir d;
    const std::string path = d.path() + "/run/baton/baton.sock";
    auto server = listen_unix(path, 0600);
    ASSERT_TRUE(server.ok()) << server.error().message;
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(stat((d.path() + "/run/baton").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);

    auto client = connect_unix(path);
    ASSERT_TRUE(client.ok()) << client.error().message;
    const int conn = accept4(*server, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(conn, 0);
    auto peer = peer_of(conn);
    ASSERT_TRUE(peer.ok()) << peer.error().message;
    EXPECT_EQ(peer->uid, getuid());
    EXPECT_EQ(peer->gid, getgid());
    EXPECT_EQ(peer->pid, getpid());

    // A second agent on the same path is refused while the first answers.
    auto second = listen_unix(path, 0600);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().message, "another baton agent answers on " + path);
    close(conn);
    close(*client);
    close(*server);

    // The first one gone (killed: its socket file stays), the next agent replaces the file.
    auto again = listen_unix(path, 0660);
    ASSERT_TRUE(again.ok()) << again.error().message;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0660u);
    close(*again);
}

TEST(QueueSocket, ClearErrorsForWhatIsNotAnAgent) {
    baton::test::TempDir d;
    auto none = connect_unix(d.path() + "/nothing.sock");
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().message, "no baton agent at " + d.path() + "/nothing.sock");
    d.write("file.sock", "not a socket");
    auto file = listen_unix(d.path() + "/file.sock", 0600);
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(file.error().message, d.path() + "/file.sock exists and is not a socket: not replacing it");
    EXPECT_FALSE(connect_unix(d.path() + "/file.sock").ok());
    const std::string long_path = d.path() + "/" + std::string(120, 'x');
    auto too_long = listen_unix(long_path, 0600);
    ASSERT_FALSE(too_long.ok());
    EXPECT_NE(too_long.error().message.find("longer than the 107 bytes"), std::string::npos);

    // A socket of another user (root can make one): a third user's client does not talk to it.
    if (geteuid() == 0) {
        ASSERT_EQ(chmod(d.path().c_str(), 0755), 0);
        const std::string theirs = d.path() + "/theirs.sock";
        auto s = listen_unix(theirs, 0666);
        ASSERT_TRUE(s.ok()) << s.error().message;
        ASSERT_EQ(chown(theirs.c_str(), 4242, 4242), 0);
        ASSERT_EQ(seteuid(65534), 0);
        auto refused = connect_unix(theirs);
        ASSERT_EQ(seteuid(0), 0);
        ASSERT_FALSE(refused.ok());
        EXPECT_EQ(refused.error().message, theirs + " belongs to uid 4242, not to root or you: not talking to it");
        ASSERT_EQ(chown(theirs.c_str(), 0, 0), 0);  // root's (the system agent's): talked to
        ASSERT_EQ(seteuid(65534), 0);
        auto allowed = connect_unix(theirs);
        ASSERT_EQ(seteuid(0), 0);
        ASSERT_TRUE(allowed.ok()) << allowed.error().message;
        close(*allowed);
        close(*s);
    }
}
