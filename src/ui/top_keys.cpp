#include "ui/top_keys.hpp"

#include <algorithm>
#include <csignal>
#include <string_view>

#include "core/text_parse.hpp"

namespace baton::ui {

namespace {

// Moves the selection by `delta` rows within `last`'s rows.
void move_selection(const LayoutResult& last, ViewState& v, int delta) {
    if (last.row_pids.empty()) return;
    const int n = static_cast<int>(last.row_pids.size());
    auto it = std::find(last.row_pids.begin(), last.row_pids.end(), v.selected_pid);
    const int at = it == last.row_pids.end() ? 0 : static_cast<int>(it - last.row_pids.begin());
    const int to = std::clamp(at + delta, 0, n - 1);
    v.selected_pid = last.row_pids[static_cast<std::size_t>(to)];
}

std::uint32_t selected(const LayoutResult& last, const ViewState& v) {
    if (last.row_pids.empty()) return 0;
    auto it = std::find(last.row_pids.begin(), last.row_pids.end(), v.selected_pid);
    return it == last.row_pids.end() ? last.row_pids.front() : *it;
}

// The actions of the bindings below.
void quit(const LayoutResult&, ViewState&, KeyOutcome& out) {
    out.quit = true;
}
void open_help(const LayoutResult&, ViewState& v, KeyOutcome&) {
    v.help = true;
}
void choose_sort(const LayoutResult&, ViewState& v, KeyOutcome&) {
    v.prompt = Prompt::sort;
}
void toggle_tree(const LayoutResult&, ViewState& v, KeyOutcome&) {
    v.tree = !v.tree;
}
void edit_filter(const LayoutResult&, ViewState& v, KeyOutcome&) {
    v.prompt = Prompt::filter;
    v.edit = v.filter;
}
void toggle_gpu_only(const LayoutResult&, ViewState& v, KeyOutcome&) {
    v.gpu_only = !v.gpu_only;
    v.scroll = 0;
}
void toggle_kernel_threads(const LayoutResult&, ViewState& v, KeyOutcome&) {
    v.kernel_threads = !v.kernel_threads;
}
void ask_signal(const LayoutResult& last, ViewState& v, KeyOutcome&) {
    v.selected_pid = selected(last, v);
    if (v.selected_pid == 0)
        v.message = "no process selected";
    else
        v.prompt = Prompt::kill;
}
void ask_nice(const LayoutResult& last, ViewState& v, KeyOutcome&) {
    v.selected_pid = selected(last, v);
    if (v.selected_pid == 0) {
        v.message = "no process selected";
    } else {
        v.prompt = Prompt::renice;
        v.edit.clear();
    }
}
void toggle_pause(const LayoutResult&, ViewState& v, KeyOutcome&) {
    v.paused = !v.paused;
}
void toggle_graphs(const LayoutResult&, ViewState& v, KeyOutcome&) {
    v.graphs = !v.graphs;
}
void toggle_gpu_details(const LayoutResult& last, ViewState& v, KeyOutcome&) {
    v.gpu_details = !last.gpu_details_shown;
}
void choose_columns(const LayoutResult&, ViewState& v, KeyOutcome&) {
    v.prompt = Prompt::columns;
}

}  // namespace

const std::vector<KeyBinding>& key_bindings() {
    static const std::vector<KeyBinding> bindings = {
        {U"q", "q", "quit", quit},
        {U"h?", "h ?", "this help (any key closes it)", open_help},
        {U"s", "s", "choose the sort column (default: GPU memory, then CPU)", choose_sort},
        {U"t", "t", "tree: processes under their parents, TREE% = the group's CPU", toggle_tree},
        {U"/", "/", "filter by text (command, user or pid); empty clears it", edit_filter},
        {U"g", "g", "only processes on a GPU", toggle_gpu_only},
        {U"K", "K", "show or hide kernel threads (hidden at start)", toggle_kernel_threads},
        {U"k", "k", "send SIGTERM or SIGKILL to the selected process (asks first)", ask_signal},
        {U"r", "r", "renice the selected process (your own; any as root)", ask_nice},
        {U"", "mouse", "click a row to select it, a column header to sort by it; the wheel scrolls", nullptr},
        {U"", "Up Down", "move the selection; PgUp PgDn Home End", nullptr},
        {U"p", "p", "pause: keep this picture", toggle_pause},
        {U"G", "G", "history graphs on or off (shown where the terminal has room)", toggle_graphs},
        {U"e", "e", "expanded GPU panel on or off: clocks, fan, links, ECC, modes, MIG", toggle_gpu_details},
        {U"c", "c", "choose the table's columns (state, GPU memory share, threads, age, ...)", choose_columns},
    };
    return bindings;
}

namespace {

// A key while a prompt is open: each prompt reads the keys it wants and ignores the rest. `c` is the
// character typed, 0 for a key with a code (Enter, Escape, arrows).
void filter_prompt_key(const Key& key, char32_t, ViewState& v, KeyOutcome&) {
    if (key.code == KeyCode::enter) {
        v.filter = v.edit;
        v.prompt = Prompt::none;
        v.scroll = 0;
    } else if (key.code == KeyCode::escape) {
        v.prompt = Prompt::none;
    } else {
        edit_text(key, v.edit);
    }
}

void sort_prompt_key(const Key&, char32_t c, ViewState& v, KeyOutcome&) {
    v.prompt = Prompt::none;
    for (SortKey k : {SortKey::gpu_memory, SortKey::cpu, SortKey::memory, SortKey::pid, SortKey::io, SortKey::user,
                      SortKey::command})
        if (c == static_cast<char32_t>(sort_key_letter(k))) v.sort = k;
}

void kill_prompt_key(const Key&, char32_t c, ViewState& v, KeyOutcome& out) {
    v.prompt = Prompt::none;
    if (c == 'y' || c == 'Y') out.signal = SIGTERM;
    if (c == '9') out.signal = SIGKILL;
    if (out.signal) out.pid = v.selected_pid;
    if (!out.signal) v.message = "nothing sent";
}

void renice_prompt_key(const Key& key, char32_t c, ViewState& v, KeyOutcome& out) {
    if (key.code == KeyCode::enter) {
        v.prompt = Prompt::none;
        std::string_view t = v.edit;
        if (t.size() > 1 && t[0] == '+' && t[1] != '-') t.remove_prefix(1);  // from_chars takes no '+'
        const std::optional<std::int64_t> value = text::take_i64(t);
        if (!value || !t.empty() || *value < -20 || *value > 19) {
            v.message = "not a nice value (-20 to 19): nothing changed";
            return;
        }
        out.nice = static_cast<int>(*value);
        out.pid = v.selected_pid;
    } else if (key.code == KeyCode::escape) {
        v.prompt = Prompt::none;
        v.message = "nothing changed";
    } else if (key.code == KeyCode::backspace) {
        edit_text(key, v.edit);
    } else if (((c >= '0' && c <= '9') || c == '-' || c == '+') && v.edit.size() < 3) {
        v.edit.push_back(static_cast<char>(c));
    }
}

void columns_prompt_key(const Key& key, char32_t c, ViewState& v, KeyOutcome&) {
    if (key.code == KeyCode::enter || key.code == KeyCode::escape) {
        v.prompt = Prompt::none;
        return;
    }
    for (const ColumnSpec& col : column_specs())
        if (c == static_cast<char32_t>(col.letter)) v.columns ^= column_bit(col.column);
}

// Each open prompt and the function that takes its keys.
struct PromptKeys {
    Prompt prompt;
    void (*key)(const Key& key, char32_t c, ViewState& v, KeyOutcome& out);
};
constexpr PromptKeys kPromptKeys[] = {
    {Prompt::filter, filter_prompt_key}, {Prompt::sort, sort_prompt_key},       {Prompt::kill, kill_prompt_key},
    {Prompt::renice, renice_prompt_key}, {Prompt::columns, columns_prompt_key},
};

// A click: on the header it sorts by that column, on a row it selects the row's process.
void click(const Key& key, const LayoutResult& last, ViewState& v) {
    if (last.header_line >= 0 && key.y == last.header_line) {
        for (const LayoutResult::SortCell& cell : last.sort_cells)
            if (key.x >= cell.from && key.x < cell.to) v.sort = cell.key;
    } else if (last.header_line >= 0 && key.y > last.header_line && key.y <= last.header_line + last.visible_rows) {
        const int row = last.scroll + key.y - last.header_line - 1;
        if (row >= 0 && row < static_cast<int>(last.row_pids.size()))
            v.selected_pid = last.row_pids[static_cast<std::size_t>(row)];
    }
}

// The keys read by their code in the main view: how far each moves the selection (a page is the
// table's visible rows less one, so one row stays in sight; Home and End go all the way).
std::optional<int> selection_step(KeyCode code, const LayoutResult& last) {
    const int page = std::max(1, last.visible_rows - 1);
    const int all = static_cast<int>(last.row_pids.size());
    switch (code) {
        case KeyCode::wheel_up:
            return -3;
        case KeyCode::wheel_down:
            return 3;
        case KeyCode::up:
            return -1;
        case KeyCode::down:
            return 1;
        case KeyCode::page_up:
            return -page;
        case KeyCode::page_down:
            return page;
        case KeyCode::home:
            return -all;
        case KeyCode::end:
            return all;
        default:
            return std::nullopt;
    }
}

}  // namespace

namespace {

void append_utf8(std::string& s, char32_t c) {
    if (c < 0x80) {
        s.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        s.push_back(static_cast<char>(0xC0 | (c >> 6)));
        s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        s.push_back(static_cast<char>(0xE0 | (c >> 12)));
        s.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x110000) {
        s.push_back(static_cast<char>(0xF0 | (c >> 18)));
        s.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

void pop_utf8(std::string& s) {
    while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
    if (!s.empty()) s.pop_back();
}

}  // namespace

void edit_text(const Key& key, std::string& text) {
    const char32_t c = key.code == KeyCode::character ? key.ch : 0;
    if (key.code == KeyCode::backspace)
        pop_utf8(text);
    else if (c == 0x15)  // Ctrl-U, as in a shell: clear the line
        text.clear();
    else if (c >= 0x20 && c != 0x7F && text.size() < 200)
        append_utf8(text, c);
}

KeyOutcome handle_key(const Key& key, const LayoutResult& last, ViewState& v) {
    KeyOutcome out;
    if (key.code == KeyCode::resize) return out;
    v.message.clear();
    const char32_t c = key.code == KeyCode::character ? key.ch : 0;
    for (const PromptKeys& p : kPromptKeys)
        if (p.prompt == v.prompt) {
            p.key(key, c, v, out);
            return out;
        }
    if (v.help) {  // any key closes the help; q still quits
        v.help = false;
        if (c == 'q') out.quit = true;
        return out;
    }
    if (key.code == KeyCode::click) {
        click(key, last, v);
        return out;
    }
    if (const std::optional<int> step = selection_step(key.code, last)) {
        move_selection(last, v, *step);
        return out;
    }
    for (const KeyBinding& b : key_bindings())
        if (b.act && b.chars.find(c) != std::u32string_view::npos) {
            b.act(last, v, out);
            break;
        }
    return out;
}

}  // namespace baton::ui
