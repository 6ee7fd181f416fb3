// Another user's process named "\e]2;PWNED\a\e[2J" (retitle the terminal, clear the screen), with a
// command line holding a C1 CSI and bytes that are not UTF-8, on the same GPU as your job: every
// text view that names it (diagnose, baton run's notes and summary, runs show, report, snapshot,
// top) prints it inert; the JSON views stay valid UTF-8 that a strict parser reads back.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

using namespace baton::test;

namespace {

const std::string kHostileName = "\x1b]2;PWNED\x07\x1b[2J";  // 14 bytes: the whole of it is the comm

// Starts `argv` as an orphan (its own job: reparented to init) and returns its pid.
pid_t start_orphan(const std::vector<std::string>& argv) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    const pid_t middle = fork();
    if (middle == 0) {
        const pid_t pid = fork();
        if (pid == 0) {
            setsid();
            const int devnull = open("/dev/null", O_RDWR);
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
            std::vector<char*> args;
            for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
            args.push_back(nullptr);
            execv(args[0], args.data());
            _exit(127);
        }
        (void)!write(fds[1], &pid, sizeof pid);
        _exit(0);
    }
    pid_t pid = -1;
    (void)!read(fds[0], &pid, sizeof pid);
    close(fds[0]);
    close(fds[1]);
    waitpid(middle, nullptr, 0);
    return pid;
}

// Control characters a terminal would act on: C0 but newline and tab, DEL, and C1 (as UTF-8).
std::string controls_in(const std::string& text) {
    std::string found;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F ||
            (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xA0))
            found += "byte " + std::to_string(c) + " at " + std::to_string(i) + "; ";
    }
    return found;
}

struct HostileBox {
    TempDir d;
    pid_t hostile = -1, other = -1;
    std::map<std::string, std::string> env = fake_env("eight-busy");
    HostileBox() {
        const std::string binary = d.path() + "/" + kHostileName;
        // A shell under that name (it waits for its sleep, so it keeps the name), with a command line
        // holding a C1 CSI and bytes that are not UTF-8 (F5-FF leads, an overlong, a surrogate).
        std::filesystem::copy_file("/bin/sh", binary);
        std::filesystem::permissions(binary, std::filesystem::perms::owner_all);
        hostile = start_orphan({binary, "-c", "sleep 30; :",
                                "\xc2\x9b"
                                "31m",
                                "\xfb\x88\xa5", "\xc0\xaf", "\xed\xa0\x80"});
        other = start_orphan({"/bin/sleep", "30"});
        std::ofstream(d.path() + "/gpu-processes") << "3 " << hostile << " 2000000000\n3 " << other << " 1000000000\n";
        env["BATON_FAKE_NVML_PROCESSES"] = d.path() + "/gpu-processes";
        usleep(100000);  // both have exec'd
    }
    ~HostileBox() {
        for (pid_t p : {hostile, other})
            if (p > 0) kill(p, SIGKILL);
    }
};

}  // namespace

TEST(HostileNames, NoTextViewPassesControlCharactersOn) {
    HostileBox box;
    ASSERT_GT(box.hostile, 0);
    const std::string db = box.d.path() + "/baton.db";
    struct View {
        std::string what;
        CommandResult r;
    };
    std::vector<View> views;
    auto add = [&](const std::string& what, const std::vector<std::string>& args) {
        std::vector<std::string> argv{baton_binary(), "--config", "/dev/null"};
        argv.insert(argv.end(), args.begin(), args.end());
        views.push_back({what, run(argv, box.env)});
    };
    add("diagnose", {"diagnose", "--duration", "1.5", "--interval", "0.5"});
    // A job on GPU3 too, named hostile: its notes, summary and record.
    add("run", {"run", "--interval", "0.2", "--db", db, "--name", "run\x1b[2Jname", "--", "sh", "-c",
                "echo \"3 $$ 4000000000\" >> " + box.d.path() + "/gpu-processes; sleep 2"});
    add("runs", {"runs", "--db", db});
    add("runs show", {"runs", "show", "1", "--db", db});
    add("report --markdown", {"report", "1", "--db", db, "--markdown"});
    add("compare", {"compare", "1", "1", "--db", db});
    add("snapshot", {"snapshot"});
    add("top --once", {"top", "--once"});
    // An error message that quotes outside text stays one line.
    add("error", {"runs", "show", "1\x1b[2J\nx", "--db", db});

    bool named = false;
    for (const View& v : views) {
        SCOPED_TRACE(v.what);
        EXPECT_EQ(controls_in(v.r.out), "") << v.r.out;
        EXPECT_EQ(controls_in(v.r.err), "") << v.r.err;
        named =
            named || v.r.out.find("]2;PWNED?") != std::string::npos || v.r.err.find("]2;PWNED?") != std::string::npos;
    }
    EXPECT_TRUE(named) << "no view named the hostile process";  // the test would be empty otherwise
    // The run's findings did name it (the contention on GPU3) and its stderr stayed inert.
    const CommandResult& run_view = views[1].r;
    EXPECT_NE(run_view.err.find("gpu_contention [gpu:3]"), std::string::npos) << run_view.err;
    EXPECT_NE(run_view.err.find("?]2;PWNED??[2J"), std::string::npos) << run_view.err;
    EXPECT_EQ(views.back().r.exit_code, 1);
    EXPECT_EQ(std::count(views.back().r.err.begin(), views.back().r.err.end(), '\n'), 1) << views.back().r.err;
    EXPECT_NE(views.back().r.err.find("1\\x1b[2J\\nx"), std::string::npos) << views.back().r.err;
}

TEST(HostileNames, JsonViewsStayValidUtf8) {
    HostileBox box;
    const CommandResult snap = run({baton_binary(), "--config", "/dev/null", "snapshot", "--json"}, box.env);
    ASSERT_EQ(snap.exit_code, 0) << snap.err;
    // A strict parser (nlohmann's throws on invalid UTF-8) reads it back, and finds the process.
    nlohmann::json doc;
    ASSERT_NO_THROW(doc = nlohmann::json::parse(snap.out));
    bool found = false;
    for (const auto& p : doc["processes"]) {
        if (p["pid"] != box.hostile) continue;
        found = true;
        EXPECT_EQ(p["name"], kHostileName);  // the real name, escaped as JSON, not altered
        const std::string cmd = p["command"];
        EXPECT_NE(cmd.find("\xc2\x9b"
                           "31m"),
                  std::string::npos)
            << cmd;                                                     // a C1 control is a valid character
        EXPECT_NE(cmd.find("\xef\xbf\xbd"), std::string::npos) << cmd;  // U+FFFD for each invalid byte
        EXPECT_EQ(cmd.find("\xfb"), std::string::npos) << cmd;
    }
    EXPECT_TRUE(found) << snap.out;
    EXPECT_EQ(controls_in(snap.out), "");  // escaped (\u001b, \u009b): inert on a terminal too
    // baton reads its own recording back.
    TempDir d;
    std::ofstream(d.path() + "/rec.jsonl") << snap.out;
    const CommandResult replay = run(
        {baton_binary(), "--config", "/dev/null", "diagnose", "--replay", d.path() + "/rec.jsonl", "--json"}, box.env);
    EXPECT_LT(replay.exit_code, 3) << replay.err;  // judged (1: a warning, the contention)
    ASSERT_TRUE(nlohmann::json::accept(replay.out)) << replay.out;
    EXPECT_NE(replay.out.find("\"rule\":\"gpu_contention\""), std::string::npos) << replay.out;
}
