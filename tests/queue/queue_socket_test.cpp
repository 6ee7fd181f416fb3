// The queue's Unix socket on real sockets: where clients look, who the kernel says is connected,
// an agent killed (its socket replaced) or still answering (refused), and sockets a client must not
// talk to.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
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

// A socket file owned by root but listened on by another user (bound as root, then the listener
// dropped to nobody): the client asks the kernel who answered, not only who owns the file.
TEST(QueueSocket, TheListenerMustBeRootOrUsNotJustTheFilesOwner) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to listen as another user";
    baton::test::TempDir d;
    const std::string path = d.path() + "/baton.sock";
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t child = fork();
    if (child == 0) {
        const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
        if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) _exit(1);  // the file: root's
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(2);
        if (listen(fd, 4) != 0) _exit(3);  // the listener: nobody's
        if (write(ready[1], "x", 1) != 1) _exit(4);
        pause();
        _exit(0);
    }
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
    struct stat st {};
    ASSERT_EQ(lstat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << "the file is root's";
    baton::Result<int> fd = baton::queue::connect_unix(path);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    close(ready[0]);
    close(ready[1]);
    ASSERT_FALSE(fd.ok()) << "talked to a listener of uid 65534";
    EXPECT_TRUE(fd.error().is(baton::ErrorCode::permission_denied));
    EXPECT_NE(fd.error().message.find("is served by uid 65534, not by root or you"), std::string::npos)
        << fd.error().message;
}
