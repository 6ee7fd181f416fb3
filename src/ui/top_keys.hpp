// Key handling of baton top: a key and the last layout change the ViewState. Pure (no
// terminal, no signals sent): the app carries out what it returns.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

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

// A key typed into a one-line text field (the filter): Backspace, Ctrl-U (clears it), or a
// printable character added (200 bytes at most). Other keys leave it as it is.
void edit_text(const Key& key, std::string& text);

// The keys of the main view, one row each: what handle_key() does on them and what the help screen
// (Layout::help) and docs/cli.md's key table say about them, in the help's order. A row with no
// characters only documents keys handle_key() reads by their code (arrows, the mouse). A new key
// is one row here (the help and a test that checks docs/cli.md follow).
struct KeyBinding {
    std::u32string_view chars;  // the characters that do it ("h?": h or ?)
    const char* keys;           // as the help names them: "h ?"
    const char* help;           // one help line
    void (*act)(const LayoutResult& last, ViewState& v, KeyOutcome& out);
};
const std::vector<KeyBinding>& key_bindings();

}  // namespace baton::ui
