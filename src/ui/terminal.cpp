#include "ui/terminal.hpp"

#include <clocale>
#include <csignal>
#include <cstdio>

#include <curses.h>

namespace baton::ui {

namespace {

// Colour pairs, one per style that has a colour.
enum Pair : short { kBest = 1, kLow, kElevated, kAlarm, kTitle };

attr_t attributes(Style s, bool color) {
    switch (s) {
        case Style::plain:
            return A_NORMAL;
        case Style::dim:
            return A_DIM;
        case Style::title:
            return A_BOLD | (color ? COLOR_PAIR(kTitle) : A_NORMAL);
        case Style::low:
            return color ? COLOR_PAIR(kLow) : A_NORMAL;
        case Style::best:
            return color ? COLOR_PAIR(kBest) : A_NORMAL;
        case Style::elevated:
            return color ? COLOR_PAIR(kElevated) | A_BOLD : A_UNDERLINE;
        case Style::alarm:
            return color ? COLOR_PAIR(kAlarm) | A_BOLD : A_BOLD | A_UNDERLINE;
        case Style::column:
        case Style::selected:
        case Style::status:
            return A_REVERSE;
    }
    return A_NORMAL;
}

volatile std::sig_atomic_t g_curses_active = 0;

void crash_handler(int sig) {
    // endwin is not async-signal-safe; the process is dying anyway, and a terminal left in raw
    // mode on the alternate screen is the worse outcome.
    if (g_curses_active) endwin();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

}  // namespace

Result<std::unique_ptr<Terminal>> Terminal::open(bool color) {
    std::setlocale(LC_ALL, "");  // ncursesw needs the locale to write UTF-8
    // newterm, unlike initscr, returns an error instead of exiting the program.
    SCREEN* screen = newterm(nullptr, stdout, stdin);
    if (!screen)
        return make_error(
            "cannot use this terminal (TERM=" + std::string(std::getenv("TERM") ? std::getenv("TERM") : "") + ")");
    g_curses_active = 1;
    std::unique_ptr<Terminal> t(new Terminal());
    cbreak();  // keys arrive at once; Ctrl-C still raises SIGINT
    noecho();
    keypad(stdscr, TRUE);
    nonl();
    curs_set(0);
    set_escdelay(25);  // Esc cancels a prompt without a visible pause
    // Clicks select rows and sort columns, the wheel scrolls (as in htop; most terminals still
    // select text with Shift held). No click interval: a press acts at once.
    mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED, nullptr);
    mouseinterval(0);
    t->color_ = color && has_colors();
    if (t->color_) {
        start_color();
        use_default_colors();
        init_pair(kBest, COLOR_GREEN, -1);
        init_pair(kLow, COLOR_CYAN, -1);
        init_pair(kElevated, COLOR_YELLOW, -1);
        init_pair(kAlarm, COLOR_RED, -1);
        init_pair(kTitle, COLOR_BLUE, -1);
    }
    return t;
}

Terminal::~Terminal() {
    endwin();
    g_curses_active = 0;
}

int Terminal::width() const {
    return COLS;
}

int Terminal::height() const {
    return LINES;
}

void Terminal::draw(const Frame& f) {
    erase();
    for (int row = 0; row < f.height && row < static_cast<int>(f.lines.size()); ++row) {
        const Line& l = f.lines[static_cast<std::size_t>(row)];
        int col = 0;
        move(row, 0);
        for (const Span& s : l.spans) {
            std::string text = clip(s.text, f.width - col);
            if (text.empty()) continue;
            attrset(attributes(s.style, color_));
            addstr(text.c_str());
            col += display_width(text);
        }
        if (l.fill != Style::plain && col < f.width) {
            attrset(attributes(l.fill, color_));
            // The last cell of the last line would scroll the screen: stop one short there.
            const int pad = f.width - col - (row == LINES - 1 ? 1 : 0);
            if (pad > 0) addstr(std::string(static_cast<std::size_t>(pad), ' ').c_str());
        }
    }
    attrset(A_NORMAL);
    refresh();
}

std::optional<Key> Terminal::read_key(int timeout_ms) {
    timeout(timeout_ms);
    wint_t ch = 0;
    const int r = get_wch(&ch);
    if (r == ERR) return std::nullopt;
    if (r == KEY_CODE_YES) {
        switch (ch) {
            case KEY_UP:
                return Key{KeyCode::up};
            case KEY_DOWN:
                return Key{KeyCode::down};
            case KEY_PPAGE:
                return Key{KeyCode::page_up};
            case KEY_NPAGE:
                return Key{KeyCode::page_down};
            case KEY_HOME:
                return Key{KeyCode::home};
            case KEY_END:
                return Key{KeyCode::end};
            case KEY_ENTER:
                return Key{KeyCode::enter};
            case KEY_BACKSPACE:
                return Key{KeyCode::backspace};
            case KEY_RESIZE:
                return Key{KeyCode::resize};
            case KEY_MOUSE: {
                MEVENT ev{};
                if (getmouse(&ev) != OK) return Key{KeyCode::other};
                Key k;
                k.x = ev.x;
                k.y = ev.y;
                if (ev.bstate & BUTTON4_PRESSED)
                    k.code = KeyCode::wheel_up;
                else if (ev.bstate & BUTTON5_PRESSED)
                    k.code = KeyCode::wheel_down;
                else if (ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED))
                    k.code = KeyCode::click;
                return k;
            }
            default:
                return Key{KeyCode::other};
        }
    }
    switch (ch) {
        case '\n':
        case '\r':
            return Key{KeyCode::enter};
        case 27:
            return Key{KeyCode::escape};
        case 127:
        case 8:
            return Key{KeyCode::backspace};
        default:
            return char_key(static_cast<char32_t>(ch));
    }
}

void restore_terminal_on_crash() {
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, crash_handler);
}

namespace {

volatile std::sig_atomic_t g_stop = 0;  // the stop signal received, 0 for none

void on_stop_signal(int sig) {
    g_stop = sig;
}

}  // namespace

void catch_stop_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

int stop_signal() {
    return g_stop;
}

int stop_exit_status() {
    return g_stop ? 128 + g_stop : 0;
}

}  // namespace baton::ui
