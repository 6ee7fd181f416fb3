// The layout, the process rows and the keys of baton top on synthetic snapshots.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <set>

#include "ui/top_keys.hpp"
#include "ui/line_fit.hpp"
#include "ui/top_layout.hpp"
#include "test_support.hpp"

using namespace baton;
using namespace baton::ui;

namespace {

ProcessInfo proc(std::uint32_t pid, std::uint32_t ppid, const std::string& cmd, double cpu,
                 std::uint64_t rss = 1 << 20) {
    ProcessInfo p;
    p.pid = pid;
    p.ppid = ppid;
    p.user = "alice";
    p.name = cmd.substr(0, cmd.find(' '));
    p.command = cmd;
    p.cpu_percent = cpu;
    p.rss_bytes = rss;
    return p;
}

// A trainer (pid 100) with four DataLoader workers, a notebook holding a GPU, and idle noise.
Snapshot training_box() {
    Snapshot s;
    s.host.hostname = "box";
    s.host.cpu_count = 8;
    s.processes = {proc(1, 0, "/sbin/init", 0),           proc(100, 1, "python train.py", 95),
                   proc(101, 100, "python train.py", 90), proc(102, 100, "python train.py", 88),
                   proc(103, 100, "python train.py", 91), proc(104, 100, "python train.py", 89),
                   proc(200, 1, "jupyter-notebook", 0.5), proc(300, 1, "sshd", 2)};
    s.processes[1].gpu_memory_bytes = 30ull << 30;
    s.processes[1].gpu_indices = {0};
    s.processes[6].gpu_memory_bytes = 40ull << 30;
    s.processes[6].gpu_indices = {1};
    return s;
}

std::vector<std::uint32_t> pids(const std::vector<ProcessRow>& rows) {
    std::vector<std::uint32_t> v;
    for (const ProcessRow& r : rows) v.push_back(r.process->pid);
    return v;
}

}  // namespace

TEST(ProcessRows, DefaultSortIsGpuMemoryThenCpu) {
    Snapshot s = training_box();
    ViewState v;
    auto rows = process_rows(s, v);
    ASSERT_EQ(rows.size(), 8u);
    EXPECT_EQ(pids(rows), (std::vector<std::uint32_t>{200, 100, 103, 101, 104, 102, 300, 1}));
    v.sort = SortKey::cpu;
    EXPECT_EQ(process_rows(s, v)[0].process->pid, 100u);
    v.sort = SortKey::pid;
    EXPECT_EQ(process_rows(s, v)[0].process->pid, 1u);
}

TEST(ProcessRows, TreeGroupsWorkersUnderTheTrainerWithTheirTotal) {
    Snapshot s = training_box();
    ViewState v;
    v.tree = true;
    v.sort = SortKey::cpu;
    auto rows = process_rows(s, v);
    ASSERT_EQ(rows.size(), 8u);
    EXPECT_EQ(rows[0].process->pid, 1u);
    EXPECT_EQ(rows[1].process->pid, 100u);  // the busiest group first among init's children
    EXPECT_EQ(rows[1].tree_prefix, "├─ ");
    EXPECT_TRUE(rows[1].has_children);
    EXPECT_DOUBLE_EQ(rows[1].group_cpu_percent, 95 + 90 + 88 + 91 + 89);
    EXPECT_EQ(rows[2].process->pid, 103u);  // workers sorted by CPU
    EXPECT_EQ(rows[2].tree_prefix, "│  ├─ ");
    EXPECT_EQ(rows[5].tree_prefix, "│  └─ ");
    EXPECT_EQ(rows.back().tree_prefix, "└─ ");
    EXPECT_DOUBLE_EQ(rows[0].group_cpu_percent, 95 + 90 + 88 + 91 + 89 + 0.5 + 2);
}

TEST(ProcessRows, FilterAndGpuOnly) {
    Snapshot s = training_box();
    ViewState v;
    v.filter = "JUPYTER";  // case-insensitive
    EXPECT_EQ(pids(process_rows(s, v)), (std::vector<std::uint32_t>{200}));
    v.filter = "300";  // a pid
    EXPECT_EQ(pids(process_rows(s, v)), (std::vector<std::uint32_t>{300}));
    v.filter = "";
    v.gpu_only = true;
    EXPECT_EQ(pids(process_rows(s, v)), (std::vector<std::uint32_t>{200, 100}));

    // Kernel threads (kthreadd, pid 2, and its children) are hidden unless asked for.
    s.processes.push_back(proc(2, 0, "[kthreadd]", 0));
    s.processes.push_back(proc(9, 2, "[kworker/0:1]", 5));
    ViewState all;
    EXPECT_EQ(process_rows(s, all).size(), 8u);
    all.kernel_threads = true;
    EXPECT_EQ(process_rows(s, all).size(), 10u);
}

TEST(ProcessRows, HostileTreeDoesNotLoopOrCrash) {
    Snapshot s;
    for (std::uint32_t pid = 1; pid <= 2000; ++pid) s.processes.push_back(proc(pid, pid - 1, "deep", 1));
    s.processes.push_back(proc(5000, 5001, "cycle-a", 1));
    s.processes.push_back(proc(5001, 5000, "cycle-b", 1));
    ViewState v;
    v.tree = true;
    v.kernel_threads = true;         // pid 2 and its child would be hidden otherwise
    auto rows = process_rows(s, v);  // a 2000-deep chain: no recursion to overflow
    EXPECT_GE(rows.size(), 2000u);
    EXPECT_DOUBLE_EQ(rows[0].group_cpu_percent, 2000);
}

TEST(TopLayout, ManyCoresBecomeACompactGrid) {
    Snapshot s = training_box();
    for (unsigned i = 0; i < 128; ++i) {
        CpuCore c;
        c.id = i;
        c.times.utilization_percent = i % 2 ? 100 : 0;
        s.cpu.cores.push_back(c);
    }
    TopInput in;
    in.snapshot = &s;
    ViewState v;
    LayoutResult r = layout_top(in, v, 80, 24);
    std::string text = render_plain(r.frame);
    EXPECT_NE(text.find("\n   0  █ █ █"), std::string::npos) << text;  // one column per core
    EXPECT_NE(text.find("\n  75 █ █"), std::string::npos) << text;     // the second row starts at core 75
    EXPECT_GE(r.visible_rows, 4);
}

TEST(TopLayout, SelectionStaysVisibleWhenScrolling) {
    Snapshot s;
    for (std::uint32_t pid = 1; pid <= 200; ++pid) s.processes.push_back(proc(pid, 1, "p" + std::to_string(pid), 0));
    TopInput in;
    in.snapshot = &s;
    ViewState v;
    v.kernel_threads = true;
    v.sort = SortKey::pid;
    v.selected_pid = 150;
    LayoutResult r = layout_top(in, v, 80, 24);
    ASSERT_GT(r.visible_rows, 0);
    EXPECT_LE(r.scroll, 149);
    EXPECT_GT(r.scroll + r.visible_rows, 149);
    std::string marked = render_marked(r.frame);
    EXPECT_NE(marked.find("{selected}    150 "), std::string::npos) << marked;
}

TEST(TopLayout, CommandLinesCannotReachTheTerminal) {
    Snapshot s;
    s.processes.push_back(proc(7, 1,
                               "evil \x1b]0;pwned\x07 \x1b[2J \xc2\x9b"
                               "31m \xff",
                               0));
    TopInput in;
    in.snapshot = &s;
    std::string text = render_plain(layout_top(in, ViewState{}, 120, 12).frame);
    EXPECT_EQ(text.find('\x1b'), std::string::npos);
    EXPECT_EQ(text.find('\x07'), std::string::npos);
    EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos);
    EXPECT_NE(text.find("evil ?]0;pwned? ?[2J ?31m ?"), std::string::npos) << text;
}

TEST(TopLayout, UnitsAndBars) {
    EXPECT_EQ(compact_bytes(0), "0B");
    EXPECT_EQ(compact_bytes(999), "999B");
    EXPECT_EQ(compact_bytes(1000), "1.0K");
    EXPECT_EQ(compact_bytes(80.0 * (1ull << 30)), "80G");
    EXPECT_EQ(compact_bytes(1.5 * (1ull << 40)), "1.5T");
    EXPECT_EQ(bar(50, 10, true), "|||||     ");
    EXPECT_EQ(bar(150, 4, true), "||||");
    EXPECT_EQ(bar(-5, 3, true), "   ");
    EXPECT_EQ(display_width(bar(37, 12, false)), 12);
    EXPECT_EQ(bar(100, 2, false), "██");
    EXPECT_EQ(bar(50, 1, false), "▌");
    EXPECT_EQ(bar(6.25, 1, false), "▏");  // half an eighth rounds up: any load shows
}

TEST(TopKeys, SortFilterTreeHelpQuit) {
    LayoutResult last;
    last.row_pids = {10, 20, 30};
    last.visible_rows = 2;
    ViewState v;
    handle_key(char_key('s'), last, v);
    EXPECT_EQ(v.prompt, Prompt::sort);
    handle_key(char_key('c'), last, v);
    EXPECT_EQ(v.sort, SortKey::cpu);
    EXPECT_EQ(v.prompt, Prompt::none);

    handle_key(char_key('/'), last, v);
    for (char c : std::string("trqk")) handle_key(char_key(static_cast<char32_t>(c)), last, v);  // keys are text here
    handle_key(Key{KeyCode::backspace}, last, v);
    handle_key(char_key(U'é'), last, v);
    handle_key(Key{KeyCode::enter}, last, v);
    EXPECT_EQ(v.filter, "trqé");
    EXPECT_FALSE(handle_key(char_key('q'), last, v).quit == false);  // q outside a prompt quits

    ViewState w;
    handle_key(char_key('/'), last, w);
    handle_key(char_key('x'), last, w);
    handle_key(Key{KeyCode::escape}, last, w);
    EXPECT_EQ(w.filter, "");  // Esc cancels
    w.filter = "old";
    handle_key(char_key('/'), last, w);
    handle_key(char_key(0x15), last, w);  // Ctrl-U
    handle_key(Key{KeyCode::enter}, last, w);
    EXPECT_EQ(w.filter, "");
    handle_key(char_key('t'), last, w);
    EXPECT_TRUE(w.tree);
    handle_key(char_key('g'), last, w);
    EXPECT_TRUE(w.gpu_only);
    handle_key(char_key('p'), last, w);
    EXPECT_TRUE(w.paused);
    handle_key(char_key('h'), last, w);
    EXPECT_TRUE(w.help);
    EXPECT_FALSE(handle_key(char_key('x'), last, w).quit);  // any key closes help
    EXPECT_FALSE(w.help);
}

TEST(TopKeys, MovingAndKilling) {
    LayoutResult last;
    last.row_pids = {10, 20, 30, 40, 50};
    last.visible_rows = 3;
    ViewState v;
    handle_key(Key{KeyCode::down}, last, v);
    EXPECT_EQ(v.selected_pid, 20u);
    handle_key(Key{KeyCode::page_down}, last, v);
    EXPECT_EQ(v.selected_pid, 40u);
    handle_key(Key{KeyCode::end}, last, v);
    EXPECT_EQ(v.selected_pid, 50u);
    handle_key(Key{KeyCode::down}, last, v);
    EXPECT_EQ(v.selected_pid, 50u);  // stays on the last row
    handle_key(Key{KeyCode::home}, last, v);
    EXPECT_EQ(v.selected_pid, 10u);

    handle_key(char_key('k'), last, v);
    EXPECT_EQ(v.prompt, Prompt::kill);
    KeyOutcome none = handle_key(char_key('n'), last, v);
    EXPECT_EQ(none.signal, 0);
    EXPECT_EQ(v.message, "nothing sent");
    handle_key(char_key('k'), last, v);
    KeyOutcome term = handle_key(char_key('y'), last, v);
    EXPECT_EQ(term.signal, SIGTERM);
    EXPECT_EQ(term.pid, 10u);
    handle_key(char_key('k'), last, v);
    EXPECT_EQ(handle_key(char_key('9'), last, v).signal, SIGKILL);

    ViewState empty;
    handle_key(char_key('k'), LayoutResult{}, empty);
    EXPECT_EQ(empty.prompt, Prompt::none);
    EXPECT_EQ(empty.message, "no process selected");
}

TEST(TopLayout, ColoursFollowTheIndicatorTable) {
    Snapshot s = training_box();
    s.cpu.total.utilization_percent = 95;
    s.cpu.total.iowait_percent = 7;
    s.swap.in_bytes_per_second = 1.5e6;
    s.swap.out_bytes_per_second = 0;
    GpuInfo g;
    g.name = "NVIDIA H200";
    g.memory_total_bytes = 100ull << 30;
    g.memory_used_bytes = 70ull << 30;  // within the best range
    s.gpus.push_back(g);
    TopInput in;
    in.snapshot = &s;
    std::string m = render_marked(layout_top(in, ViewState{}, 160, 30).frame);
    EXPECT_NE(m.find("{alarm} 95%{/}"), std::string::npos) << m;
    EXPECT_NE(m.find("{alarm}iow 7.0{/}"), std::string::npos) << m;
    EXPECT_NE(m.find("{alarm}in 1.4M/s{/}"), std::string::npos) << m;
    EXPECT_NE(m.find("{best} 70G/100G{/}"), std::string::npos) << m;

    in.thresholds.cpu_alarm_percent = 99;  // configured thresholds, not constants
    in.thresholds.cpu_best_max_percent = 96;
    m = render_marked(layout_top(in, ViewState{}, 160, 30).frame);
    EXPECT_NE(m.find("{best} 95%{/}"), std::string::npos) << m;
}

TEST(TopColumns, ParseNamesAndRefuseUnknownOnes) {
    EXPECT_EQ(*parse_columns("user,gpu,gmem,sm,cpu,rss,io"), default_columns());
    EXPECT_EQ(*parse_columns("age threads"), column_bit(Column::age) | column_bit(Column::threads));
    EXPECT_EQ(*parse_columns(""), 0u);  // PID and COMMAND only
    auto bad = parse_columns("cpu,mem");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("unknown column 'mem' (known: user, state,"), std::string::npos);
    auto hostile = parse_columns("\x1b]0;x\x07");
    ASSERT_FALSE(hostile.ok());
    EXPECT_EQ(hostile.error().message.find('\x1b'), std::string::npos);  // made printable
}

TEST(TopColumns, StateThreadsAgeAndGpuMemoryShare) {
    Snapshot s = training_box();
    s.time_unix_ms = 1'700'000'000'000;
    GpuInfo g0, g1;
    g0.index = 0;
    g0.memory_total_bytes = 80ull << 30;
    g1.index = 1;
    g1.memory_total_bytes = 80ull << 30;
    s.gpus = {g0, g1};
    s.processes[1].state = 'R';
    s.processes[1].threads = 42;
    s.processes[1].start_time_ms = s.time_unix_ms - (3 * 3600 + 5 * 60) * 1000LL;  // 3h05
    s.processes[6].start_time_ms = s.time_unix_ms - 2 * 86400 * 1000LL - 4 * 3600 * 1000LL;
    ViewState v;
    v.show_selection = false;
    v.sort = SortKey::pid;
    v.columns = *parse_columns("state,gmem,gmem_share,threads,age");
    TopInput in;
    in.snapshot = &s;
    const std::string f = render_plain(layout_top(in, v, 100, 30).frame);
    EXPECT_NE(f.find("   ▼PID S  GMEM GMEM%  THR    AGE COMMAND"), std::string::npos) << f;
    // Sorted by pid the trainer is the second row: 30G of GPU0's 80G is 37.5 %.
    EXPECT_NE(f.find("    100 R   30G  37.5   42   3h05 python train.py"), std::string::npos) << f;
    EXPECT_NE(f.find("    200 ?   40G  50.0    -   2d4h jupyter-notebook"), std::string::npos) << f;
    EXPECT_EQ(f.find("USER"), std::string::npos) << f;  // not chosen
}

TEST(TopColumns, ThePromptTogglesColumnsByLetter) {
    ViewState v;
    LayoutResult last;
    handle_key(char_key('c'), last, v);
    EXPECT_EQ(v.prompt, Prompt::columns);
    handle_key(char_key('a'), last, v);  // age on
    handle_key(char_key('u'), last, v);  // user off
    handle_key(char_key('x'), last, v);  // no such column: nothing
    EXPECT_EQ(v.prompt, Prompt::columns);
    EXPECT_TRUE(v.columns & column_bit(Column::age));
    EXPECT_FALSE(v.columns & column_bit(Column::user));
    Snapshot s = training_box();
    TopInput in;
    in.snapshot = &s;
    const std::string f = render_plain(layout_top(in, v, 200, 20).frame);
    EXPECT_NE(f.find("Columns: u USER s S g GPU* m GMEM* M GMEM% S SM%* c CPU%* r RSS* i IO/s* t THR a AGE*"),
              std::string::npos)
        << f;
    Key enter;
    enter.code = KeyCode::enter;
    handle_key(enter, last, v);
    EXPECT_EQ(v.prompt, Prompt::none);
}

TEST(TopKeys, ReniceAsksForAValueInRange) {
    Snapshot s = training_box();
    ViewState v;
    TopInput in;
    in.snapshot = &s;
    LayoutResult last = layout_top(in, v, 100, 30);
    handle_key(char_key('r'), last, v);
    ASSERT_EQ(v.prompt, Prompt::renice);
    const std::uint32_t pid = v.selected_pid;  // the first row: the notebook holding most GPU memory
    EXPECT_EQ(pid, 200u);
    EXPECT_NE(render_plain(layout_top(in, v, 120, 30).frame).find("Renice 200 (jupyter-notebook) to: _"),
              std::string::npos);
    for (char32_t c : {U'1', U'x', U'0'}) handle_key(char_key(c), last, v);  // letters are not typed
    Key enter;
    enter.code = KeyCode::enter;
    KeyOutcome out = handle_key(enter, last, v);
    EXPECT_EQ(out.nice, 10);
    EXPECT_EQ(out.pid, 200u);
    EXPECT_EQ(v.prompt, Prompt::none);
    // Out of range, or no number: nothing is sent, and the user is told.
    for (const char* typed : {"-30", "-", "", "+20"}) {
        handle_key(char_key('r'), last, v);
        for (const char* c = typed; *c; ++c) handle_key(char_key(static_cast<char32_t>(*c)), last, v);
        out = handle_key(enter, last, v);
        EXPECT_FALSE(out.nice.has_value()) << typed;
        EXPECT_NE(v.message.find("nothing changed"), std::string::npos) << typed;
    }
    handle_key(char_key('r'), last, v);
    handle_key(char_key('-'), last, v);
    handle_key(char_key('5'), last, v);
    out = handle_key(enter, last, v);
    EXPECT_EQ(out.nice, -5);  // lowering is root's; the app reports the kernel's refusal
    Key esc;
    esc.code = KeyCode::escape;
    handle_key(char_key('r'), last, v);
    EXPECT_FALSE(handle_key(esc, last, v).nice.has_value());
    EXPECT_EQ(v.prompt, Prompt::none);
}

TEST(TopKeys, MouseSortsByHeaderSelectsRowsAndScrolls) {
    Snapshot s = training_box();
    ViewState v;
    TopInput in;
    in.snapshot = &s;
    LayoutResult last = layout_top(in, v, 100, 30);
    ASSERT_GE(last.header_line, 0);
    const std::string f = render_plain(last.frame);
    // The header line as drawn: find "CPU%" in it and click there.
    std::size_t start = 0;
    for (int i = 0; i < last.header_line; ++i) start = f.find('\n', start) + 1;
    const std::string header = f.substr(start, f.find('\n', start) - start);
    const std::size_t cpu_at = header.find("CPU%");
    ASSERT_NE(cpu_at, std::string::npos) << header;
    Key click;
    click.code = KeyCode::click;
    click.x = display_width(header.substr(0, cpu_at)) + 1;
    click.y = last.header_line;
    handle_key(click, last, v);
    EXPECT_EQ(v.sort, SortKey::cpu);
    // A click on the third row selects its process.
    last = layout_top(in, v, 100, 30);
    click.x = 3;
    click.y = last.header_line + 3;
    handle_key(click, last, v);
    EXPECT_EQ(v.selected_pid, last.row_pids[2]);
    // The wheel moves the selection three rows; a click outside the table does nothing.
    Key wheel;
    wheel.code = KeyCode::wheel_down;
    handle_key(wheel, last, v);
    EXPECT_EQ(v.selected_pid, last.row_pids[5]);
    wheel.code = KeyCode::wheel_up;
    handle_key(wheel, last, v);
    EXPECT_EQ(v.selected_pid, last.row_pids[2]);
    click.y = 0;
    handle_key(click, last, v);
    EXPECT_EQ(v.selected_pid, last.row_pids[2]);
    EXPECT_EQ(v.sort, SortKey::cpu);
}

// The key table (ui/top_keys.cpp) is what handle_key() does, what the help screen says and what
// docs/cli.md's key table lists: no key bound twice, each bound key documented, each documented
// key bound.
TEST(TopKeys, TheBindingsAreTheHelpAndTheDocs) {
    std::set<char32_t> bound;
    for (const KeyBinding& b : key_bindings())
        for (char32_t c : b.chars) EXPECT_TRUE(bound.insert(c).second) << "a key bound twice: " << b.keys;
    // The help screen shows every row.
    Snapshot s;
    TopInput in;
    in.snapshot = &s;
    ViewState v;
    v.help = true;
    const std::string screen = render_plain(layout_top(in, v, 100, 40).frame);
    for (const KeyBinding& b : key_bindings())
        EXPECT_NE(screen.find(std::string(b.keys)), std::string::npos) << b.keys << " is not on the help screen";
    // docs/cli.md: the rows of the table after "Keys:" name single characters in backticks.
    std::ifstream in_doc(baton::test::source_dir() + "/docs/cli.md");
    std::string line;
    bool keys = false;
    std::set<char32_t> documented;
    while (std::getline(in_doc, line)) {
        if (line == "| key | action |") keys = true;
        if (!keys) continue;
        if (line.empty()) break;
        const std::size_t end = line.find(" | ", 2);
        const std::string cell = line.substr(0, end);
        for (std::size_t i = 0; i + 2 < cell.size(); ++i)
            if (cell[i] == '`' && cell[i + 2] == '`') documented.insert(static_cast<char32_t>(cell[i + 1]));
    }
    EXPECT_EQ(documented, bound) << "docs/cli.md's baton top keys and ui/top_keys.cpp's bindings differ";
    // Every bound key does something, outside a prompt.
    for (char32_t c : bound) {
        ViewState w;
        LayoutResult last;
        last.row_pids = {1};
        const ViewState before = w;
        const KeyOutcome out = handle_key(char_key(c), last, w);
        const bool changed = out.quit || w.help != before.help || w.prompt != before.prompt || w.tree != before.tree ||
                             w.gpu_only != before.gpu_only || w.kernel_threads != before.kernel_threads ||
                             w.paused != before.paused || w.graphs != before.graphs ||
                             w.gpu_details != before.gpu_details;
        EXPECT_TRUE(changed) << "key " << static_cast<char>(c) << " did nothing";
    }
}
