// Key handling of baton top: a key and the last layout change the ViewState. Pure (no
// terminal, no signals sent): the app carries out what it returns.
#pragma once

#include <cstdint>
#include <optional>

#include "ui/top_layout.hpp"
#include "ui/view_state.hpp"

namespace baton::ui {

enum class KeyCode {
    character,
    up,
    down,
    page_up,
    page_down,
    home,
    end,
    enter,
    escape,
    backspace,
    resize,
    click,     // a mouse button pressed or clicked at (x, y)
    wheel_up,  // the mouse wheel
    wheel_down,
    other
};

struct Key {
    KeyCode code = KeyCode::other;
    char32_t ch = 0;   // for KeyCode::character
    int x = 0, y = 0;  // for mouse events: the cell, 0-based from the top left
};

inline Key char_key(char32_t c) {
    return Key{KeyCode::character, c};
}

struct KeyOutcome {
    bool quit = false;
    int signal = 0;           // non-zero: send this signal to `pid` (confirmed by the user)
    std::optional<int> nice;  // set: renice `pid` to this value
    std::uint32_t pid = 0;
};

KeyOutcome handle_key(const Key& key, const LayoutResult& last, ViewState& v);

}  // namespace baton::ui
