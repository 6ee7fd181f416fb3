// Text that came from outside baton (process names and command lines, user names, host and GPU
// names, run names, the hook's payloads, file contents in error messages) made safe for a
// terminal, in one place (docs/security.md). Another user's process named "\e]2;PWNED\a\e[2J"
// must not retitle or clear your terminal when `baton diagnose` names it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace baton {

// Length (1-4) of the well-formed UTF-8 sequence at s[i], or 0 where the bytes there are not
// one (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF, no F5-FF lead bytes,
// no truncated sequence).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

// One field, on one line: control characters (C0, newline and tab included, DEL, and the C1
// controls U+0080-U+009F, which some terminals read as escape sequences) and bytes that are not
// UTF-8 become '?'. Everything else, East Asian and emoji included, is kept.
std::string printable(std::string_view s);

// A whole text view (several lines): the same, but newlines and tabs are kept.
std::string printable_text(std::string_view s);

// A word as /bin/sh reads it back, byte for byte: in single quotes, each ' as '\'' (a job's name
// in a callback's command, a path in an sbatch script). Not for display: nothing is replaced.
std::string sh_quoted(std::string_view word);

// The same word on one line, for a command a user pastes (a snippet printed line by line): sh_quoted
// when it holds no control character, else bash's $'...' with \n, \t, \r, \\, \' and \xNN
// (bash, zsh and ksh read it back byte for byte; a newline inside plain quotes would split the line).
std::string sh_quoted_line(std::string_view word);

// An error message, always one line and readable: newline, tab and carriage return as \n, \t,
// \r, every other control character and byte that is not UTF-8 as \xNN.
std::string escaped_line(std::string_view s);

}  // namespace baton
