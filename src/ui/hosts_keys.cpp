#include "ui/hosts_keys.hpp"

#include <algorithm>

namespace baton::ui {

namespace {

// The selected host's place in `last.shown` (the first when none or gone).
int selected_index(const HostsLayoutResult& last, const HostsViewState& v) {
    auto it = std::find(last.shown.begin(), last.shown.end(), v.selected);
    return it == last.shown.end() ? 0 : static_cast<int>(it - last.shown.begin());
}

void move_host_selection(const HostsLayoutResult& last, HostsViewState& v, int delta) {
    if (last.shown.empty()) return;
    const int to = std::clamp(selected_index(last, v) + delta, 0, static_cast<int>(last.shown.size()) - 1);
    v.selected = last.shown[static_cast<std::size_t>(to)];
}

// Hosts per page: those whose head line the last frame showed, less one, at least one.
int hosts_per_page(const HostsLayoutResult& last) {
    int heads = 0, previous = -1;
    for (int h : last.host_at_line)
        if (h >= 0 && h != previous) {
            ++heads;
            previous = h;
        }
    return std::max(1, heads - 1);
}

}  // namespace

HostsKeyOutcome handle_hosts_key(const Key& key, const HostsLayoutResult& last, HostsViewState& v) {
    HostsKeyOutcome out;
    if (key.code == KeyCode::resize) return out;
    v.message.clear();
    const char32_t c = key.code == KeyCode::character ? key.ch : 0;
    if (v.prompt == HostsPrompt::filter) {
        if (key.code == KeyCode::enter) {
            v.filter = v.edit;
            v.prompt = HostsPrompt::none;
            v.scroll = 0;
        } else if (key.code == KeyCode::escape) {
            v.prompt = HostsPrompt::none;
        } else {
            edit_text(key, v.edit);
        }
        return out;
    }
    if (v.prompt == HostsPrompt::sort) {
        v.prompt = HostsPrompt::none;
        for (HostSort k : kHostSorts)
            if (c == static_cast<char32_t>(host_sort_letter(k))) v.sort = k;
        return out;
    }
    if (v.help) {  // any key closes the help; q still quits
        v.help = false;
        out.quit = c == 'q';
        return out;
    }
    const int page = hosts_per_page(last);
    const int all = static_cast<int>(last.shown.size());
    switch (key.code) {
        case KeyCode::up:
        case KeyCode::wheel_up:
            move_host_selection(last, v, -1);
            return out;
        case KeyCode::down:
        case KeyCode::wheel_down:
            move_host_selection(last, v, 1);
            return out;
        case KeyCode::page_up:
            move_host_selection(last, v, -page);
            return out;
        case KeyCode::page_down:
            move_host_selection(last, v, page);
            return out;
        case KeyCode::home:
            move_host_selection(last, v, -all);
            return out;
        case KeyCode::end:
            move_host_selection(last, v, all);
            return out;
        case KeyCode::click:
            if (key.y >= 0 && key.y < static_cast<int>(last.host_at_line.size()) &&
                last.host_at_line[static_cast<std::size_t>(key.y)] >= 0)
                v.selected = last.shown[static_cast<std::size_t>(last.host_at_line[static_cast<std::size_t>(key.y)])];
            return out;
        case KeyCode::enter:
            if (!last.shown.empty()) out.open = last.shown[static_cast<std::size_t>(selected_index(last, v))];
            return out;
        default:
            break;
    }
    switch (c) {
        case 'q':
            out.quit = true;
            break;
        case 'h':
        case '?':
            v.help = true;
            break;
        case 's':
            v.prompt = HostsPrompt::sort;
            break;
        case '/':
            v.prompt = HostsPrompt::filter;
            v.edit = v.filter;
            break;
        case 'g':
            v.free_only = !v.free_only;
            v.scroll = 0;
            break;
        default:
            break;
    }
    return out;
}

}  // namespace baton::ui
