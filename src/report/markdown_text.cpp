#include "report/markdown_text.hpp"

namespace baton::report {

std::string markdown_text(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '<')
            out += "&lt;";
        else if (c == '>')
            out += "&gt;";
        else if (c == '&')
            out += "&amp;";
        else if (c == '\n')
            out += ' ';
        else
            out.push_back(c);
    }
    return out;
}

std::string markdown_cell(const std::string& s) {
    std::string out;
    for (char c : markdown_text(s)) {
        if (c == '|')
            out += "\\|";
        else
            out.push_back(c);
    }
    return out;
}

}  // namespace baton::report
