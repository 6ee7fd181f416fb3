// The layout of baton top --hosts: every host's block (its line, its GPUs with who holds them, its
// active findings) after the filter and the sort, in a Frame of the given size. Pure, like
// top_layout: tested as text.
#pragma once

#include <string>
#include <vector>

#include "core/thresholds.hpp"
#include "ui/frame.hpp"
#include "ui/hosts_view.hpp"

namespace baton::ui {

struct HostsLayoutResult {
    Frame frame;
    std::vector<std::string> shown;  // the hosts shown, by name, in display order
    std::vector<int> host_at_line;   // for each frame line, the index in `shown` of its host (-1: none)
    int scroll = 0;                  // first line of the blocks shown
    int visible_lines = 0;           // lines the blocks had room for
};

HostsLayoutResult layout_hosts(const std::vector<HostView>& hosts, const Thresholds& t, const HostsViewState& v,
                               int width, int height);

// The keys of the hosts view, for the help and docs/cli.md: {keys, what they do}.
struct HostsKeyHelp {
    const char* keys;
    const char* help;
};
const std::vector<HostsKeyHelp>& hosts_key_help();

}  // namespace baton::ui
