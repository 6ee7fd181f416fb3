// Text from outside (names, command lines, findings that quote them, source paths) in the Markdown
// report: HTML escaped (a Markdown viewer renders raw HTML; a process named "<img src=x onerror=...>"
// must stay text), and one line.
#pragma once

#include <string>

namespace baton::report {

std::string markdown_text(const std::string& s);

// The same in a table cell, where '|' would end the cell.
std::string markdown_cell(const std::string& s);

}  // namespace baton::report
