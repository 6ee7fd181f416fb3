// The hosts view of baton top --hosts on synthetic hosts: which GPU is free, who holds the others,
// how a host that does not answer is said, and what the filter, `g`, the sort and the keys do.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "test_support.hpp"
#include "ui/hosts_keys.hpp"
#include "ui/hosts_layout.hpp"

using namespace baton;
using namespace baton::ui;

namespace {

GpuInfo fleet_gpu(unsigned index, double util, double mem_gib, std::vector<std::uint32_t> holders = {}) {
    GpuInfo g;
    g.index = index;
    g.name = "NVIDIA H100 80GB HBM3";
    g.utilization_percent = util;
    g.memory_used_bytes = static_cast<std::uint64_t>(mem_gib * (1ull << 30));
    g.memory_total_bytes = 80ull << 30;
    g.temperature_celsius = 40;
    g.power_watts = 100;
    for (std::uint32_t pid : holders) {
        GpuProcess p;
        p.pid = pid;
        p.local_pid = pid;
        p.used_memory_bytes = 20ull << 30;
        g.processes.push_back(p);
    }
    return g;
}

ProcessInfo fleet_holder(std::uint32_t pid, const std::string& user, const std::string& command) {
    ProcessInfo p;
    p.pid = pid;
    p.user = user;
    p.name = command.substr(0, command.find(' '));
    p.command = command;
    p.gpu_memory_bytes = 20ull << 30;
    return p;
}

HostView fleet_host(const std::string& name, std::vector<GpuInfo> gpus, std::vector<ProcessInfo> processes = {},
                    double cpu = 20) {
    auto s = std::make_shared<Snapshot>();
    s->host.hostname = name;
    s->host.cpu_count = 64;
    s->cpu.total.utilization_percent = cpu;
    s->memory.total_bytes = 512ull << 30;
    s->memory.available_bytes = 400ull << 30;
    s->gpu_status = "ok";
    s->gpu_state = GpuState::ok;
    s->gpus = std::move(gpus);
    s->processes = std::move(processes);
    HostView h;
    h.name = name;
    h.url = "http://" + name + ":22866";
    h.status = HostStatus::ok;
    h.snapshot = std::move(s);
    h.full_processes = false;
    return h;
}

// Three boxes: alice trains on a's GPU0 and bob on b's two GPUs; c is down.
std::vector<HostView> fleet() {
    std::vector<HostView> out;
    out.push_back(fleet_host("gpu-a", {fleet_gpu(0, 97, 60, {100}), fleet_gpu(1, 0, 0.3)},
                             {fleet_holder(100, "alice", "python train.py --bs 64")}, 30));
    out.push_back(fleet_host(
        "gpu-b", {fleet_gpu(0, 80, 40, {200}), fleet_gpu(1, 85, 40, {201}), fleet_gpu(2, 0, 0.2), fleet_gpu(3, 0, 0.2)},
        {fleet_holder(200, "bob", "torchrun finetune.py"), fleet_holder(201, "bob", "torchrun finetune.py")}, 70));
    HostView down;
    down.name = "gpu-c";
    down.url = "http://gpu-c:22866";
    down.status = HostStatus::down;
    down.error = "cannot connect to gpu-c:22866: Connection refused";
    out.push_back(down);
    return out;
}

std::string text_of(const HostsLayoutResult& r) {
    return render_plain(r.frame);
}

HostsLayoutResult lay(const std::vector<HostView>& hosts, const HostsViewState& v, int w = 110, int h = 30) {
    return layout_hosts(hosts, Thresholds{}, v, w, h);
}

bool shows(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST(HostsLayout, EveryHostWithItsGpusTheirHoldersAndTheDownOneSaysWhy) {
    HostsViewState v;
    const std::string t = text_of(lay(fleet(), v));
    EXPECT_TRUE(shows(t, "3 hosts: 2 answering, 1 down  6 GPUs, 3 free")) << t;
    EXPECT_TRUE(shows(t, "gpu-a  ok  2 GPUs, 1 free  CPU 30% of 64  mem 112G/512G")) << t;
    EXPECT_TRUE(shows(t, "alice python train.py --bs 64")) << t;
    EXPECT_TRUE(shows(t, "gpu-c  down  cannot connect to gpu-c:22866: Connection refused")) << t;
    // GPU1 of gpu-a: idle, no process: free; GPU0: alice's.
    std::istringstream lines(t);
    std::string line;
    int free_lines = 0;
    while (std::getline(lines, line))
        free_lines += line.rfind("  GPU", 0) == 0 && line.size() > 6 && line.substr(line.size() - 6) == "  free";
    EXPECT_EQ(free_lines, 3) << t;
    EXPECT_TRUE(shows(t, "bob torchrun finetune.py")) << t;
}

TEST(HostsLayout, AFreeGpuHasNoProcessLittleUseAndLittleMemory) {
    EXPECT_TRUE(gpu_is_free(fleet_gpu(0, 0, 0.5)));
    EXPECT_TRUE(gpu_is_free(fleet_gpu(0, 9, 3.9)));
    EXPECT_FALSE(gpu_is_free(fleet_gpu(0, 0, 0.5, {7})));  // a process on it
    EXPECT_FALSE(gpu_is_free(fleet_gpu(0, 50, 0.5)));      // busy: someone NVML does not list
    EXPECT_FALSE(gpu_is_free(fleet_gpu(0, 0, 20)));        // its memory held
    GpuInfo lost = fleet_gpu(0, 0, 0);
    lost.lost = true;
    EXPECT_FALSE(gpu_is_free(lost));
    GpuInfo failing = fleet_gpu(0, 0, 0);
    failing.error = "GPU is lost";
    EXPECT_FALSE(gpu_is_free(failing));
}

TEST(HostsLayout, FreeOnlyShowsWhereOneCanRun) {
    HostsViewState v;
    v.free_only = true;
    const HostsLayoutResult r = lay(fleet(), v);
    const std::string t = text_of(r);
    EXPECT_EQ(r.shown, (std::vector<std::string>{"gpu-a", "gpu-b"}));
    EXPECT_FALSE(shows(t, "alice")) << t;
    EXPECT_FALSE(shows(t, "gpu-c")) << t;  // down: nothing to run on there
    EXPECT_TRUE(shows(t, "free GPUs only")) << t;
    // Only the free GPUs: gpu-b's 2 and 3.
    EXPECT_TRUE(shows(t, "  GPU2 ")) << t;
    EXPECT_FALSE(shows(t, "  GPU0 ")) << t;

    std::vector<HostView> busy = fleet();
    busy.erase(busy.begin(), busy.begin() + 2);
    EXPECT_TRUE(shows(text_of(lay(busy, v)), "no free GPU on the hosts that answer"));
}

TEST(HostsLayout, TheFilterTakesHostsWholeAndOtherwiseTheMatchingGpus) {
    HostsViewState v;
    v.filter = "ALICE";
    HostsLayoutResult r = lay(fleet(), v);
    EXPECT_EQ(r.shown, (std::vector<std::string>{"gpu-a"}));
    std::string t = text_of(r);
    EXPECT_TRUE(shows(t, "  GPU0 ")) << t;
    EXPECT_FALSE(shows(t, "  GPU1 ")) << t;  // gpu-a's free GPU is not alice's
    v.filter = "gpu-b";
    r = lay(fleet(), v);
    EXPECT_EQ(r.shown, (std::vector<std::string>{"gpu-b"}));
    EXPECT_TRUE(shows(text_of(r), "  GPU3 "));  // the host by name: all of its GPUs
    v.filter = "finetune";
    EXPECT_EQ(lay(fleet(), v).shown, (std::vector<std::string>{"gpu-b"}));
    v.filter = "nothing-like-it";
    r = lay(fleet(), v);
    EXPECT_TRUE(r.shown.empty());
    EXPECT_TRUE(shows(text_of(r), "no host matches the filter"));
}

TEST(HostsLayout, SortsPutHostsThatDoNotAnswerLast) {
    std::vector<HostView> hosts = fleet();
    std::swap(hosts[0], hosts[2]);  // c, b, a
    HostsViewState v;
    EXPECT_EQ(lay(hosts, v).shown, (std::vector<std::string>{"gpu-c", "gpu-b", "gpu-a"}));
    v.sort = HostSort::name;
    EXPECT_EQ(lay(hosts, v).shown, (std::vector<std::string>{"gpu-a", "gpu-b", "gpu-c"}));
    v.sort = HostSort::free_gpus;
    EXPECT_EQ(lay(hosts, v).shown, (std::vector<std::string>{"gpu-b", "gpu-a", "gpu-c"}));
    v.sort = HostSort::cpu;
    EXPECT_EQ(lay(hosts, v).shown, (std::vector<std::string>{"gpu-b", "gpu-a", "gpu-c"}));
    v.sort = HostSort::gpu_util;  // a: (97 + 0) / 2 = 48.5; b: (80 + 85) / 4 = 41
    EXPECT_EQ(lay(hosts, v).shown, (std::vector<std::string>{"gpu-a", "gpu-b", "gpu-c"}));
}

TEST(HostsLayout, StaleUnauthorizedAndWaitingHostsAreSaid) {
    std::vector<HostView> hosts = fleet();
    hosts[0].status = HostStatus::stale;
    hosts[0].error = "no answer for 7 s";
    hosts[1].status = HostStatus::unauthorized;
    hosts[1].error = "the agent wants a token (--token-file) and refused none";
    hosts[2].status = HostStatus::waiting;
    hosts[2].error.clear();
    HostsViewState v;
    const std::string t = text_of(lay(hosts, v));
    EXPECT_TRUE(shows(t, "gpu-a  stale")) << t;
    EXPECT_TRUE(shows(t, "no answer for 7 s")) << t;
    EXPECT_TRUE(shows(t, "alice python")) << t;  // a stale host's last GPUs stay, said as stale
    EXPECT_TRUE(shows(t, "gpu-b  unauthorized  the agent wants a token")) << t;
    EXPECT_FALSE(shows(t, "bob")) << t;  // its old snapshot is not shown as if it were current
    EXPECT_TRUE(shows(t, "gpu-c  waiting")) << t;
}

TEST(HostsLayout, FindingsAreListedWorstFirstAndCounted) {
    std::vector<HostView> hosts = fleet();
    for (int i = 0; i < 5; ++i) {
        diagnose::Finding f;
        f.rule = "r" + std::to_string(i);
        f.severity = i == 3 ? diagnose::Severity::critical : diagnose::Severity::info;
        f.summary = "finding number " + std::to_string(i);
        hosts[0].findings.push_back(f);
    }
    HostsViewState v;
    std::string t = text_of(lay(hosts, v));
    EXPECT_TRUE(shows(t, "  critical finding number 3")) << t;
    EXPECT_TRUE(shows(t, "  info finding number 0")) << t;
    EXPECT_FALSE(shows(t, "finding number 4")) << t;
    EXPECT_TRUE(shows(t, "and 2 more findings")) << t;
    v.free_only = true;
    EXPECT_FALSE(shows(text_of(lay(hosts, v)), "finding number"));
}

TEST(HostsLayout, TheSelectedHostStaysInViewOnASmallScreen) {
    std::vector<HostView> hosts;
    for (int i = 0; i < 10; ++i)
        hosts.push_back(
            fleet_host("h" + std::to_string(i), {fleet_gpu(0, 0, 0), fleet_gpu(1, 0, 0), fleet_gpu(2, 0, 0)}));
    HostsViewState v;
    v.selected = "h8";
    const HostsLayoutResult r = lay(hosts, v, 100, 12);
    const std::string t = text_of(r);
    EXPECT_TRUE(shows(t, "h8  ok")) << t;
    EXPECT_FALSE(shows(t, "h0  ok")) << t;
    EXPECT_EQ(static_cast<int>(r.frame.lines.size()), 12);
    // Every line, at most the width.
    for (const Line& l : r.frame.lines) EXPECT_LE(l.width(), 100);
    // Narrow: still fits.
    for (const Line& l : lay(hosts, v, 40, 12).frame.lines) EXPECT_LE(l.width(), 40);
    v.help = true;
    for (const Line& l : lay(hosts, v, 40, 12).frame.lines) EXPECT_LE(l.width(), 40);
}

TEST(HostsKeys, SelectionOpenSortFilterAndFreeOnly) {
    const std::vector<HostView> hosts = fleet();
    HostsViewState v;
    HostsLayoutResult last = lay(hosts, v);
    handle_hosts_key(Key{KeyCode::down}, last, v);
    EXPECT_EQ(v.selected, "gpu-b");
    HostsKeyOutcome out = handle_hosts_key(Key{KeyCode::enter}, last, v);
    EXPECT_EQ(out.open, "gpu-b");
    handle_hosts_key(Key{KeyCode::end}, last, v);
    EXPECT_EQ(v.selected, "gpu-c");
    handle_hosts_key(Key{KeyCode::home}, last, v);
    EXPECT_EQ(v.selected, "gpu-a");
    // A click on a line of gpu-b's block selects gpu-b.
    for (std::size_t y = 0; y < last.host_at_line.size(); ++y)
        if (last.host_at_line[y] == 1) {
            handle_hosts_key(Key{KeyCode::click, 0, 3, static_cast<int>(y)}, last, v);
            break;
        }
    EXPECT_EQ(v.selected, "gpu-b");

    handle_hosts_key(char_key('s'), last, v);
    EXPECT_EQ(v.prompt, HostsPrompt::sort);
    handle_hosts_key(char_key('f'), last, v);
    EXPECT_EQ(v.sort, HostSort::free_gpus);
    EXPECT_EQ(v.prompt, HostsPrompt::none);

    handle_hosts_key(char_key('/'), last, v);
    for (char32_t c : std::u32string(U"bob")) handle_hosts_key(char_key(c), last, v);
    EXPECT_TRUE(shows(text_of(lay(hosts, v)), "Filter: bob_"));
    handle_hosts_key(Key{KeyCode::enter}, last, v);
    EXPECT_EQ(v.filter, "bob");

    handle_hosts_key(char_key('g'), last, v);
    EXPECT_TRUE(v.free_only);
    handle_hosts_key(char_key('h'), last, v);
    EXPECT_TRUE(v.help);
    EXPECT_TRUE(shows(text_of(lay(hosts, v)), "free GPUs only, on the hosts that have one"));
    EXPECT_FALSE(handle_hosts_key(char_key('x'), last, v).quit);  // closes the help
    EXPECT_FALSE(v.help);
    EXPECT_TRUE(handle_hosts_key(char_key('q'), last, v).quit);
}

// The help's keys (ui/hosts_layout.cpp) are docs/cli.md's table of the hosts view's keys: every
// one-character key in one is in the other.
TEST(HostsKeys, TheHelpIsTheDocs) {
    std::set<std::string> helped, documented;
    for (const HostsKeyHelp& k : hosts_key_help()) {
        std::istringstream words(k.keys);
        std::string w;
        while (words >> w)
            if (w.size() == 1) helped.insert(w);
    }
    std::ifstream doc(baton::test::source_dir() + "/docs/cli.md");
    std::string line;
    bool table = false;
    while (std::getline(doc, line)) {
        if (line == "| key | action in the hosts view |") table = true;
        if (!table) continue;
        if (line.empty()) break;
        const std::string cell = line.substr(0, line.find(" | ", 2));
        for (std::size_t i = 0; i + 2 < cell.size(); ++i)
            if (cell[i] == '`' && cell[i + 2] == '`') documented.insert(cell.substr(i + 1, 1));
    }
    EXPECT_FALSE(documented.empty()) << "no hosts key table in docs/cli.md";
    EXPECT_EQ(helped, documented);
}
