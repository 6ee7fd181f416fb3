#include "cli/usage_hints.hpp"

#include <algorithm>

#include <CLI/CLI.hpp>

namespace baton::cli {

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
// neighbours, each one edit ("snapshto" is one edit from "snapshot").
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

// "baton runs show": the names from the top-level App down to `cmd`.
std::string command_path(const CLI::App* cmd) {
    std::string path;
    for (; cmd; cmd = cmd->get_parent()) path = cmd->get_name() + (path.empty() ? "" : " " + path);
    return path;
}

// The long and short option names `cmd` accepts, its parents' too (they fall through).
std::vector<std::string> option_names(const CLI::App* cmd) {
    std::vector<std::string> names;
    for (; cmd; cmd = cmd->get_parent())
        for (const CLI::Option* o : cmd->get_options()) {
            for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
            for (const std::string& s : o->get_snames()) names.push_back("-" + s);
        }
    return names;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
    const std::string c = closest(word, candidates);
    return c.empty() ? "" : " (did you mean '" + c + "'?)";
}

}  // namespace

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_distance = 3;
    for (const std::string& c : candidates) {
        const std::size_t d = edit_distance(word, c);
        if (d < best_distance && 2 * d < word.size()) {
            best = c;
            best_distance = d;
        }
    }
    if (!best.empty() || word.size() < 2) return best;
    std::vector<std::string> starting;
    for (const std::string& c : candidates)
        if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) starting.push_back(c);
    return starting.size() == 1 ? starting.front() : "";
}

std::string unexpected_words_message(const CLI::App& app) {
    // The subcommand the words were given to: the deepest one selected.
    const CLI::App* cmd = &app;
    while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
    const std::vector<std::string> words = app.remaining(true);
    if (words.empty()) return "unexpected arguments";
    const std::string& word = words.front();
    const std::string where = cmd == &app ? "" : " for '" + command_path(cmd) + "'";
    if (word.size() > 1 && word[0] == '-') {
        const std::string name = word.substr(0, word.find('='));
        return "unknown option '" + name + "'" + where + did_you_mean(name, option_names(cmd));
    }
    std::vector<std::string> commands;
    for (const CLI::App* sub : cmd->get_subcommands({})) commands.push_back(sub->get_name());
    if (!commands.empty() && cmd->get_subcommands().empty())
        return "unknown command '" + word + "'" + where + did_you_mean(word, commands);
    const std::string path = command_path(cmd);  // "baton" or "baton runs show"
    return "unexpected argument '" + word + "'" + where + " (see: baton help" +
           path.substr(path.find(' ') == std::string::npos ? path.size() : path.find(' ')) + ")";
}

}  // namespace baton::cli
