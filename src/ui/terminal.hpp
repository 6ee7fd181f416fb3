// The terminal side of baton top, through ncursesw: draws Frames and reads keys. Styles become
// colours here and only here. The terminal is restored by the destructor, and by
// restore_terminal_on_crash() from a fatal signal.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "ui/frame.hpp"
#include "ui/top_keys.hpp"

namespace baton::ui {

class Terminal {
  public:
    // Takes over the terminal (alternate screen, no echo, keypad). `color`: use colours when the
    // terminal has them (false: bold, reverse and underline only; NO_COLOR sets this).
    static Result<std::unique_ptr<Terminal>> open(bool color);
    ~Terminal();
    Terminal(const Terminal&) = delete;
    Terminal& operator=(const Terminal&) = delete;

    int width() const;
    int height() const;
    void draw(const Frame& f);
    // Waits up to `timeout_ms` for a key; nullopt on timeout or an interrupting signal.
    std::optional<Key> read_key(int timeout_ms);

  private:
    Terminal() = default;
    bool color_ = false;
};

// Installs handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT that leave curses mode
// before the default action (a core dump) runs, so a crash does not leave the shell unusable.
void restore_terminal_on_crash();

// SIGINT, SIGTERM and SIGHUP end baton top's loops (the terminal is then restored normally): each
// sets the flag stop_signal() reads. No SA_RESTART: a blocked read returns, so a loop sees it at once.
void catch_stop_signals();
// The stop signal received, 0 for none.
int stop_signal();
// baton top's exit status: 0 after q or the last frame, 128 + N after stop signal N (as a shell says it).
int stop_exit_status();

}  // namespace baton::ui
