#include "cli/cmd_explain.hpp"

#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_common.hpp"
#include "cli/usage_hints.hpp"

namespace baton::cli {

namespace {

struct Section {
    std::string_view name, text;  // text: from the heading to the next one, the heading included
};

// The catalogue's "## " sections whose heading is a rule id (lower case and underscores: not
// "JSON output" or "Exit status").
std::vector<Section> rule_sections(std::string_view doc) {
    std::vector<Section> out;
    std::size_t at = doc.find("\n## ");
    while (at != std::string_view::npos) {
        const std::size_t start = at + 1;
        const std::size_t eol = doc.find('\n', start);
        const std::size_t next = doc.find("\n## ", start);
        const std::string_view name =
            doc.substr(start + 3, (eol == std::string_view::npos ? doc.size() : eol) - start - 3);
        const std::string_view text = doc.substr(start, (next == std::string_view::npos ? doc.size() : next) - start);
        if (!name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string_view::npos)
            out.push_back({name, text});
        at = next;
    }
    return out;
}

// The first sentence of a section's body, for the list.
std::string first_sentence(std::string_view text) {
    std::size_t body = text.find("\n\n");
    if (body == std::string_view::npos) return "";
    std::string s(text.substr(body + 2));
    for (char& c : s)
        if (c == '\n') c = ' ';
    const std::size_t end = s.find(". ");
    if (end != std::string::npos) s.resize(end + 1);
    return s.size() > 100 ? s.substr(0, 97) + "..." : s;
}

}  // namespace

CLI::App* add_explain_command(CLI::App& app, ExplainArgs& a) {
    CLI::App* cmd = app.add_subcommand(
        "explain", "What a finding means, when it fires and what to do: its section of the findings catalogue");
    cmd->add_option("rule", a.rule, "A rule id (input_bound, gpu_memory_near_oom, ...); none: list them");
    return cmd;
}

int run_explain(const ExplainArgs& a) {
    const std::vector<Section> sections = rule_sections(findings_catalogue());
    if (a.rule.empty()) {
        std::string out;
        for (const Section& s : sections) {
            std::string name(s.name);
            name.resize(std::max<std::size_t>(name.size(), 32), ' ');
            out += name + " " + first_sentence(s.text) + "\n";
        }
        write_stdout(out);
        return kExitOk;
    }
    std::vector<std::string> names;
    for (const Section& s : sections) {
        if (s.name == a.rule) {
            std::string text(s.text);
            while (!text.empty() && text.back() == '\n') text.pop_back();
            write_stdout(text + "\n");
            return kExitOk;
        }
        names.emplace_back(s.name);
    }
    const std::string near = closest(a.rule, names);
    return usage_error("no rule '" + a.rule + "'" +
                       (near.empty() ? " (baton explain lists them)" : " (did you mean '" + near + "'?)"));
}

}  // namespace baton::cli
