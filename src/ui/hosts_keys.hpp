// Key handling of baton top --hosts: a key and the last layout change the HostsViewState. Pure, as
// top_keys: the app carries out what it returns (quit, open a host's full view).
#pragma once

#include <string>

#include "ui/hosts_layout.hpp"
#include "ui/top_keys.hpp"

namespace baton::ui {

struct HostsKeyOutcome {
    bool quit = false;
    std::string open;  // non-empty: show this host's full view
};

HostsKeyOutcome handle_hosts_key(const Key& key, const HostsLayoutResult& last, HostsViewState& v);

}  // namespace baton::ui
