// The kubelet's pod-resources API: the protobuf answer decoded by hand (recorded shapes, unknown
// fields, hostile bytes), and the gRPC call against a real gRPC server (Debian's grpcio, messages
// from the documented v1 API: tests/sample/fake_kubelet.py) that answers, hangs, lies, fails or
// floods; and pods named by the GPUs allocated to them.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "core/clock.hpp"
#include "sample/jobs/grpc_unix.hpp"
#include "sample/jobs/job_table.hpp"
#include "sample/jobs/pod_resources.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::jobs;

namespace {

std::string varint(std::uint64_t v) {
    std::string out;
    while (v >= 128) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
    return out;
}

std::string field(int number, const std::string& bytes) {
    return varint(static_cast<std::uint64_t>(number) << 3 | 2) + varint(bytes.size()) + bytes;
}

std::string devices(const std::string& resource, std::initializer_list<std::string> ids) {
    std::string out = field(1, resource);
    for (const std::string& id : ids) out += field(2, id);
    return out;
}

const std::string kGpu0 = "GPU-11111111-2222-4333-8444-555555555555";
const std::string kGpu1 = "GPU-66666666-7777-4888-8999-aaaaaaaaaaaa";

// ml/trainer's container "main" holds GPU 0 and a time-sliced replica of GPU 1; web/nginx none.
std::string two_pods() {
    const std::string main = field(1, "main") + field(2, devices("nvidia.com/gpu", {kGpu0, kGpu1 + "::3"})) +
                             varint(3 << 3 | 0) + varint(7);  // cpu_ids as a varint: skipped
    const std::string trainer = field(1, "trainer") + field(2, "ml") + field(3, main);
    const std::string nginx = field(1, "nginx") + field(2, "web") + field(3, field(1, "nginx"));
    return field(1, trainer) + field(1, nginx) + field(9, "a field a newer kubelet added");
}

std::string python() {
    return "/usr/bin/python3";
}

bool have_grpc() {
    return test::run({python(), "-c", "import grpc, google.protobuf"}).exit_code == 0;
}

// The fake kubelet on a socket in `d`, serving `pods` (JSON) in `mode`; stopped by pid.
class FakeKubelet {
  public:
    FakeKubelet(const test::TempDir& d, const std::string& pods, const std::string& mode)
        : socket_(d.path() + "/kubelet.sock") {
        d.write("pods.json", pods);
        const std::string log = d.path() + "/kubelet-" + mode + ".log";
        pid_ = test::start_process(
            {python(), test::source_dir() + "/tests/sample/fake_kubelet.py", socket_, d.path() + "/pods.json", mode},
            {}, log);
        const double until = monotonic_seconds() + 30;
        while (monotonic_seconds() < until && test::read_text(log).find("ready") == std::string::npos)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        EXPECT_NE(test::read_text(log).find("ready"), std::string::npos) << test::read_text(log);
    }
    ~FakeKubelet() {
        kill(pid_, SIGTERM);
        const double until = monotonic_seconds() + 5;
        while (monotonic_seconds() < until && waitpid(pid_, nullptr, WNOHANG) != pid_)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (kill(pid_, 0) == 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    const std::string& socket() const { return socket_; }

  private:
    std::string socket_;
    int pid_ = -1;
};

const char* kPodsJson = R"([
  {"name": "trainer", "namespace": "ml", "containers": [
    {"name": "main", "cpu_ids": [0, 1], "devices": [
      {"resource_name": "nvidia.com/gpu", "device_ids": ["GPU-11111111-2222-4333-8444-555555555555"]}]},
    {"name": "sidecar"}]},
  {"name": "notebook", "namespace": "research", "containers": [
    {"name": "jupyter", "devices": [
      {"resource_name": "nvidia.com/gpu", "device_ids": ["GPU-66666666-7777-4888-8999-aaaaaaaaaaaa::1"]}]}]},
  {"name": "nginx", "namespace": "web", "containers": [{"name": "nginx"}]}
])";

}  // namespace

TEST(PodResources, DecodesPodsContainersAndDevices) {
    Result<std::vector<PodDevice>> d = parse_pod_resources(two_pods());
    ASSERT_TRUE(d.ok()) << d.error().message;
    ASSERT_EQ(d->size(), 2u);
    EXPECT_EQ((*d)[0].pod_namespace, "ml");
    EXPECT_EQ((*d)[0].pod, "trainer");
    EXPECT_EQ((*d)[0].container, "main");
    EXPECT_EQ((*d)[0].resource, "nvidia.com/gpu");
    EXPECT_EQ((*d)[0].device_id, kGpu0);
    EXPECT_EQ((*d)[1].device_id, kGpu1);            // the replica's "::3" removed
    EXPECT_TRUE(parse_pod_resources("")->empty());  // no pods
}

TEST(PodResources, HostileAnswersAreOneLineErrors) {
    const std::string good = two_pods();
    for (std::size_t cut = 1; cut < good.size(); ++cut) {
        Result<std::vector<PodDevice>> r = parse_pod_resources(good.substr(0, cut));
        if (!r.ok()) {
            EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
        }
    }
    EXPECT_FALSE(parse_pod_resources(good.substr(0, good.size() - 5)).ok());
    for (const std::string& bad :
         {std::string("\x0a\xff\xff\xff\xff\x0f", 6), std::string(11, '\xff'), std::string("\x0b", 1),
          std::string("\x00\x01", 2), field(1, field(1, "Trainer\"x")), field(1, field(2, std::string(300, 'a'))),
          field(1, field(3, field(1, "main") + field(2, devices("nvidia.com/gpu", {"GPU-1\"\\"})))),
          field(1, field(3, field(2, devices("nvidia.com/gpu\n", {kGpu0}))))}) {
        Result<std::vector<PodDevice>> r = parse_pod_resources(bad);
        EXPECT_FALSE(r.ok()) << bad.size();
        if (!r.ok()) {
            EXPECT_EQ(r.error().message.rfind("a malformed pod-resources answer (", 0), 0u) << r.error().message;
        }
    }
    // A million tiny devices: refused past the cap, quickly.
    std::string many_ids;
    for (int i = 0; i < 100001; ++i) many_ids += field(2, "d");
    const std::string flood = field(1, field(1, "p") + field(2, "n") + field(3, field(1, "c") + field(2, many_ids)));
    const double before = monotonic_seconds();
    EXPECT_FALSE(parse_pod_resources(flood).ok());
    EXPECT_LT(monotonic_seconds() - before, 2.0);
}

TEST(PodResources, AsksARealGrpcServer) {
    if (!have_grpc())
        GTEST_SKIP() << "python3-grpcio and python3-protobuf are not installed (scripts/test.sh installs them)";
    test::TempDir d;
    FakeKubelet k(d, kPodsJson, "ok");
    Result<std::vector<PodDevice>> r = list_pod_resources(k.socket(), 5);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].pod, "trainer");
    EXPECT_EQ((*r)[0].container, "main");
    EXPECT_EQ((*r)[0].device_id, kGpu0);
    EXPECT_EQ((*r)[1].pod_namespace, "research");
    EXPECT_EQ((*r)[1].device_id, kGpu1);
    // Asked again on the same server: the same.
    EXPECT_EQ(list_pod_resources(k.socket(), 5)->size(), 2u);
}

TEST(PodResources, AServerThatHangsLiesFailsOrFloodsIsAnErrorInTime) {
    if (!have_grpc())
        GTEST_SKIP() << "python3-grpcio and python3-protobuf are not installed (scripts/test.sh installs them)";
    struct Case {
        const char* mode;
        const char* error;
    };
    for (const Case& c :
         {Case{"hang", "no answer within the deadline"}, Case{"lie", "a malformed pod-resources answer"},
          Case{"error", "answered without a message"}, Case{"huge", "an answer larger than"}}) {
        test::TempDir d;
        FakeKubelet k(d, kPodsJson, c.mode);
        const double before = monotonic_seconds();
        Result<std::vector<PodDevice>> r = list_pod_resources(k.socket(), 1.5);
        EXPECT_LT(monotonic_seconds() - before, 3.0) << c.mode;
        ASSERT_FALSE(r.ok()) << c.mode;
        EXPECT_NE(r.error().message.find(c.error), std::string::npos) << c.mode << ": " << r.error().message;
        EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    }
    // No server: at once.
    test::TempDir d;
    Result<std::vector<PodDevice>> none = list_pod_resources(d.path() + "/missing.sock", 5);
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.error().message.find("missing.sock"), std::string::npos) << none.error().message;
    // A path too long for a Unix socket.
    EXPECT_FALSE(grpc_unary_call(std::string(300, 'x'), "/v1.PodResourcesLister/List", "", 1).ok());
    // Not an HTTP/2 server: one that answers HTTP/1.1 and closes.
    const std::string plain = d.path() + "/http1.sock";
    const int server = test::start_process(
        {python(), "-c",
         "import "
         "socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\ns.listen()\nprint('ready',flush=True)\n"
         "c,_=s.accept()\nc.recv(65536)\nc.sendall(b'HTTP/1.1 400 Bad Request\\r\\n\\r\\n')\nc.close()",
         plain},
        {}, d.path() + "/http1.log");
    const double until = monotonic_seconds() + 10;
    while (monotonic_seconds() < until && test::read_text(d.path() + "/http1.log").find("ready") == std::string::npos)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Result<std::string> http1 = grpc_unary_call(plain, "/v1.PodResourcesLister/List", "", 2);
    ASSERT_FALSE(http1.ok());
    EXPECT_NE(http1.error().message.find("a frame larger than allowed"), std::string::npos) << http1.error().message;
    kill(server, SIGKILL);
    waitpid(server, nullptr, 0);
}

TEST(PodResources, APodOnAGpuIsNamedByTheKubelet) {
    if (!have_grpc())
        GTEST_SKIP() << "python3-grpcio and python3-protobuf are not installed (scripts/test.sh installs them)";
    test::TempDir d;
    FakeKubelet k(d, kPodsJson, "ok");
    JobTableOptions o;
    o.proc_root = d.path();
    o.scontrol = "";
    o.kubelet_socket = k.socket();
    JobTable t(o);
    Snapshot s;
    for (const std::string& uuid : {kGpu0, kGpu1}) {
        GpuInfo g;
        g.index = static_cast<unsigned>(s.gpus.size());
        g.uuid = uuid;
        s.gpus.push_back(g);
    }
    // Two pods by UID: one whose process uses GPU 0, one on no GPU.
    const auto pod_process = [](std::uint32_t pid, const std::string& uid) {
        ProcessInfo p;
        p.pid = pid;
        p.job = JobRef{JobKind::pod, uid, "", std::string(64, 'c'), "containerd"};
        return p;
    };
    s.processes = {pod_process(10, "aaaaaaaa-0000-4000-8000-000000000001"),
                   pod_process(11, "aaaaaaaa-0000-4000-8000-000000000002")};
    s.processes[0].gpu_indices = {0};
    t.update(s, 0);
    t.settle(s, 0.5, 5);
    ASSERT_EQ(s.jobs.size(), 2u);
    EXPECT_EQ(s.jobs[0].label, "pod:ml/trainer");
    EXPECT_EQ(s.jobs[0].name, "trainer");
    EXPECT_EQ(s.jobs[0].pod_namespace, "ml");
    EXPECT_EQ(s.jobs[0].container, "main");
    EXPECT_EQ(s.jobs[0].names_from, "kubelet");
    EXPECT_EQ(s.jobs[0].allocated_gpus, std::vector<unsigned>{0});
    EXPECT_EQ(s.jobs[1].label, "pod:aaaaaaaa-0000-4000-8000-000000000002");  // on no GPU: its UID
    // Named once, the pod keeps its names when its process leaves the GPU.
    s.processes[0].gpu_indices.clear();
    t.update(s, 1);
    EXPECT_EQ(s.jobs[0].label, "pod:ml/trainer");
}
