#include "cli/cli_docs.hpp"

#include <algorithm>
#include <cctype>

#include <CLI/CLI.hpp>

namespace baton::cli {

namespace {

// The subcommands shown in help (CLI11 hides those with an empty group).
std::vector<const CLI::App*> visible(const CLI::App& app) {
    return app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
}

std::vector<const CLI::Option*> named_options(const CLI::App& app) {
    return app.get_options([](const CLI::Option* o) { return o->nonpositional(); });
}

std::vector<const CLI::Option*> positionals(const CLI::App& app) {
    return app.get_options([](const CLI::Option* o) { return !o->nonpositional(); });
}

std::vector<std::string> names(const CLI::Option* o) {
    std::vector<std::string> out;
    for (const std::string& s : o->get_snames()) out.push_back("-" + s);
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
    return out;
}

bool takes_value(const CLI::Option* o) {
    return o->get_expected_max() > 0;
}

// An option whose value is a path (a plain TEXT value: files, databases, interpreters, directories).
bool takes_path(const CLI::Option* o) {
    return takes_value(o) && o->get_type_name() == "TEXT" && o->get_lnames() != std::vector<std::string>{"name"} &&
           o->get_lnames() != std::vector<std::string>{"filter"};
}

// The values a choice option takes, from its validator's description ("TEXT:{jsonl,csv}").
std::vector<std::string> choices(const CLI::Option* o) {
    const std::string t = o->get_type_name();
    const std::size_t open = t.find('{'), close = t.find('}');
    std::vector<std::string> out;
    if (open == std::string::npos || close == std::string::npos || close < open) return out;
    std::string item;
    for (char c : t.substr(open + 1, close - open - 1)) {
        if (c == ',') {
            out.push_back(item);
            item.clear();
        } else if (c != ' ') {
            item += c;
        }
    }
    if (!item.empty()) out.push_back(item);
    return out;
}

// The value's placeholder in a man page: "FILE", "D" (a duration), "N", "TEXT".
std::string value_name(const CLI::Option* o) {
    const std::string t = o->get_type_name();
    if (t.find("DURATION") != std::string::npos) return "DURATION";
    if (takes_path(o)) return "PATH";
    if (t.find("INT") != std::string::npos || t.find("UINT") != std::string::npos) return "N";
    if (t.find("FLOAT") != std::string::npos) return "NUMBER";
    return "VALUE";
}

std::string words_of(const std::vector<std::string>& w) {
    std::string out;
    for (const std::string& s : w) out += (out.empty() ? "" : " ") + s;
    return out;
}

// What the bash script is made of: the options that take a value (their next word is not a
// command) and those whose value is a path, the choices per option, the words per command.
struct BashTables {
    std::vector<std::string> value_options, path_options;
    std::string value_cases;  // `case "$prev"` arms: the values of choice options
    std::string cases;        // `case "$cmd/$sub"` arms: the words after each command and action
};

// Every long option of `a` and of its parents (options fall through to the parents).
std::vector<std::string> option_words(const CLI::App& a) {
    std::vector<std::string> w;
    for (const CLI::App* c = &a; c; c = c->get_parent())
        for (const CLI::Option* o : named_options(*c))
            for (const std::string& n : o->get_lnames())
                if (std::find(w.begin(), w.end(), "--" + n) == w.end()) w.push_back("--" + n);
    return w;
}

void note_options(const CLI::App& a, BashTables& t) {
    for (const CLI::Option* o : named_options(a)) {
        for (const std::string& n : names(o)) {
            if (takes_value(o)) t.value_options.push_back(n);
            if (takes_path(o)) t.path_options.push_back(n);
        }
        const std::vector<std::string> c = choices(o);
        if (c.empty()) continue;
        for (const std::string& n : names(o))
            if (t.value_cases.find("        " + n + ")") == std::string::npos)
                t.value_cases +=
                    "        " + n + ") COMPREPLY=($(compgen -W \"" + words_of(c) + "\" -- \"$cur\")); return ;;\n";
    }
}

void sort_unique(std::vector<std::string>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

BashTables bash_tables(const CLI::App& app) {
    BashTables t;
    for (const CLI::Option* o : named_options(app))  // the top level's choices are not completed
        for (const std::string& n : names(o)) {
            if (takes_value(o)) t.value_options.push_back(n);
            if (takes_path(o)) t.path_options.push_back(n);
        }
    std::vector<std::string> top;
    for (const CLI::App* sub : visible(app)) top.push_back(sub->get_name());
    for (const std::string& o : option_words(app)) top.push_back(o);
    t.cases += "        /) words=\"" + words_of(top) + "\" ;;\n";
    for (const CLI::App* sub : visible(app)) {
        note_options(*sub, t);
        std::vector<std::string> w;
        for (const CLI::App* action : visible(*sub)) w.push_back(action->get_name());
        if (sub->get_name() == "help" || sub->get_name() == "man")
            for (const CLI::App* s : visible(app)) w.push_back(s->get_name());
        if (sub->get_name() == "completion") w = {"bash", "zsh", "fish"};
        for (const std::string& o : option_words(*sub)) w.push_back(o);
        const bool actions = !visible(*sub).empty();
        t.cases += "        " + sub->get_name() + (actions ? "/" : "/*") + ") words=\"" + words_of(w) + "\" ;;\n";
        for (const CLI::App* action : visible(*sub)) {
            note_options(*action, t);
            t.cases += "        " + sub->get_name() + "/" + action->get_name() + ") words=\"" +
                       words_of(option_words(*action)) + "\" ;;\n";
        }
    }
    sort_unique(t.value_options);
    sort_unique(t.path_options);
    return t;
}

std::string bash(const CLI::App& app) {
    const BashTables t = bash_tables(app);
    return "# bash completion for baton: generated by `baton completion bash` from its own command line\n"
           "# definition. Install: /usr/share/bash-completion/completions/baton, or source it.\n"
           "_baton() {\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
           "    local values=\" " +
           words_of(t.value_options) + " \" paths=\" " + words_of(t.path_options) +
           " \"\n"
           "    local cmd=\"\" sub=\"\" i words\n"
           "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
           "        local w=${COMP_WORDS[i]}\n"
           "        if [[ $w == -- && $cmd == run ]]; then compopt -o default 2>/dev/null; COMPREPLY=(); return; fi\n"
           "        if [[ $values == *\" $w \"* ]]; then ((i++)); continue; fi\n"
           "        [[ $w == -* ]] && continue\n"
           "        if [[ -z $cmd ]]; then cmd=$w; elif [[ -z $sub ]]; then sub=$w; fi\n"
           "    done\n"
           "    case \"$prev\" in\n" +
           t.value_cases +
           "    esac\n"
           "    if [[ $paths == *\" $prev \"* ]]; then compopt -o default 2>/dev/null; COMPREPLY=(); return; fi\n"
           "    if [[ $values == *\" $prev \"* ]]; then COMPREPLY=(); return; fi\n"
           "    case \"$cmd/$sub\" in\n" +
           t.cases +
           "        *) words=\"\" ;;\n"
           "    esac\n"
           "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
           "}\n"
           "complete -F _baton baton\n";
}

std::string fish_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'' || c == '\\') out += '\\';
        out += c;
    }
    return out + "'";
}

std::string fish(const CLI::App& app) {
    std::string out =
        "# fish completion for baton: generated by `baton completion fish` from its own command line definition.\n"
        "complete -c baton -f\n";
    auto options = [&](const CLI::App& a, const std::string& condition) {
        for (const CLI::Option* o : named_options(a)) {
            out += "complete -c baton -n " + fish_quote(condition);
            for (const std::string& s : o->get_snames()) out += " -s " + s;
            for (const std::string& l : o->get_lnames()) out += " -l " + l;
            if (takes_value(o)) out += takes_path(o) ? " -r -F" : " -r";
            if (!choices(o).empty()) out += " -a " + fish_quote(words_of(choices(o)));
            out += " -d " + fish_quote(o->get_description()) + "\n";
        }
    };
    options(app, "__fish_use_subcommand");
    std::vector<std::string> all;
    for (const CLI::App* sub : visible(app)) all.push_back(sub->get_name());
    for (const CLI::App* sub : visible(app)) {
        out += "complete -c baton -n __fish_use_subcommand -a " + sub->get_name() + " -d " +
               fish_quote(sub->get_description()) + "\n";
        const std::string in = "__fish_seen_subcommand_from " + sub->get_name();
        options(*sub, in);
        std::vector<std::string> actions;
        for (const CLI::App* action : visible(*sub)) actions.push_back(action->get_name());
        for (const CLI::App* action : visible(*sub)) {
            out += "complete -c baton -n " +
                   fish_quote(in + "; and not __fish_seen_subcommand_from " + words_of(actions)) + " -a " +
                   action->get_name() + " -d " + fish_quote(action->get_description()) + "\n";
            options(*action, in + "; and __fish_seen_subcommand_from " + action->get_name());
        }
        if (sub->get_name() == "help" || sub->get_name() == "man")
            out += "complete -c baton -n " + fish_quote(in) + " -a " + fish_quote(words_of(all)) + "\n";
        if (sub->get_name() == "completion") out += "complete -c baton -n " + fish_quote(in) + " -a 'bash zsh fish'\n";
    }
    return out;
}

// Text for roff: backslashes and hyphens escaped, no line starting with a control character.
std::string roff(const std::string& text) {
    std::string out;
    bool line_start = true;
    for (char c : text) {
        if (line_start && (c == '.' || c == '\'')) out += "\\&";
        if (c == '\\')
            out += "\\e";
        else if (c == '-')
            out += "\\-";
        else
            out += c;
        line_start = c == '\n';
    }
    return out;
}

void option_list(const CLI::App& a, std::string& out) {
    for (const CLI::Option* o : named_options(a)) {
        std::string head;
        for (const std::string& n : names(o))
            head += (head.empty() ? "" : ", ") + std::string("\\fB") + roff(n) + "\\fR";
        if (takes_value(o)) head += " \\fI" + value_name(o) + "\\fR";
        out += ".TP\n" + head + "\n" + roff(o->get_description()) + "\n";
    }
}

}  // namespace

std::string completion_script(const CLI::App& app, const std::string& shell) {
    if (shell == "bash") return bash(app);
    if (shell == "zsh")
        return "#compdef baton\n# zsh completion for baton: generated by `baton completion zsh`; it runs the bash one\n"
               "# through zsh's bashcompinit. Install as _baton in a directory of $fpath.\n"
               "autoload -U +X bashcompinit && bashcompinit\n" +
               bash(app);
    if (shell == "fish") return fish(app);
    return "";
}

std::vector<std::string> man_page_commands(const CLI::App& app) {
    std::vector<std::string> out;
    for (const CLI::App* sub : visible(app)) out.push_back(sub->get_name());
    return out;
}

namespace {

std::string man_synopsis(const CLI::App& cmd, const std::string& command) {
    if (command.empty())
        return ".B baton\n[\\fB\\-\\-config\\fR \\fIFILE\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n.br\n"
               ".B baton \\-\\-version\n.br\n.B baton help\n[\\fICOMMAND\\fR]\n";
    std::string out = ".B baton " + roff(command) + "\n";
    if (!visible(cmd).empty()) out += "[\\fIACTION\\fR] ";
    out += "[\\fIOPTIONS\\fR]";
    for (const CLI::Option* p : positionals(cmd)) out += " \\fI" + roff(p->get_name(true)) + "\\fR";
    return out + "\n";
}

// baton(1)'s own: what every command shares, then the commands.
std::string man_commands(const CLI::App& app) {
    std::string out =
        ".PP\nEvery command that prints data has \\fB\\-\\-json\\fR, but \\fBtop\\fR (a screen; \\fBbaton snapshot "
        "\\-\\-json\\fR gives its data) and \\fBlaunch\\fR (the ranks' own output; its run is in \\fBbaton runs "
        "\\-\\-json\\fR). Options that take a time accept a "
        "duration: a bare number of seconds (90, 0.5) or number+unit parts (90s, 1m30s, 5min, 2h, 30d, "
        "250ms). Global options may also follow the command.\n";
    out += ".SH COMMANDS\n";
    for (const CLI::App* sub : visible(app))
        out += ".TP\n\\fB" + roff(sub->get_name()) + "\\fR\n" + roff(sub->get_description()) + " (baton\\-" +
               roff(sub->get_name()) + "(1))\n";
    return out;
}

void argument_list(const CLI::App& a, std::string& out) {
    for (const CLI::Option* p : positionals(a))
        out += ".TP\n\\fI" + roff(p->get_name(true)) + "\\fR\n" + roff(p->get_description()) + "\n";
}

// A command's actions (runs show, runs export, ...), a section each.
std::string man_actions(const CLI::App& cmd, const std::string& command) {
    std::string out;
    for (const CLI::App* action : visible(cmd)) {
        out += ".SH " + roff(command) + " " + roff(action->get_name()) + "\n" + roff(action->get_description()) + ".\n";
        if (!positionals(*action).empty()) {
            out += ".PP\nArguments:\n";
            argument_list(*action, out);
        }
        option_list(*action, out);
    }
    return out;
}

constexpr const char* kManExitStatus =
    ".SH EXIT STATUS\n0 success; 1 a runtime failure, with one line \\fBbaton: MESSAGE\\fR on stderr; 2 bad usage, "
    "with one line \\fBbaton: error: MESSAGE\\fR. \\fBbaton diagnose\\fR: 0 ok, 1 warning, 2 critical, 3 could "
    "not judge; \\fBbaton doctor\\fR: 1 when a check failed; \\fBbaton run\\fR: the command's own status "
    "(128+N after signal N, 127 not found, 126 not executable); \\fBbaton launch\\fR: 0 when every rank "
    "exited 0, else the first failed rank's status, 128+N when the launcher was stopped by signal N, 127/126 "
    "when the program cannot be found/executed, 1 when a pre-flight check fails; \\fBbaton wait\\fR: the "
    "job's status (0 done, its code, 128+N after signal N, 1 when it never ran); \\fBbaton submit\\fR and "
    "the other queue commands: 2 when the agent refuses the request (one line why), 1 when it cannot be "
    "reached.\n";

std::string man_see_also(const CLI::App& app, const std::string& command) {
    std::string out = ".SH SEE ALSO\n";
    if (command.empty()) {
        std::string also;
        for (const CLI::App* sub : visible(app))
            also += (also.empty() ? "" : ",\n") + std::string("\\fBbaton\\-") + roff(sub->get_name()) + "\\fR(1)";
        out += also + "\n";
    } else {
        out += "\\fBbaton\\fR(1)\n";
    }
    return out +
           ".PP\nThe full reference, with examples: /usr/share/doc/baton/cli.md; each finding: \\fBbaton explain\\fR "
           "\\fIRULE\\fR.\n";
}

}  // namespace

std::string man_page(const CLI::App& app, const std::string& command, const std::string& version) {
    const CLI::App* cmd = &app;
    if (!command.empty()) {
        cmd = nullptr;
        for (const CLI::App* sub : visible(app))
            if (sub->get_name() == command) cmd = sub;
        if (!cmd) return "";
    }
    const std::string title = command.empty() ? "baton" : "baton-" + command;
    std::string upper = title;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::string out = ".\\\" Generated by `baton man " + command + "` from baton's own command line definition.\n";
    out += ".TH " + upper + " 1 \"\" \"" + roff(version) + "\" \"User Commands\"\n";
    out += ".SH NAME\n" + roff(title) + " \\- " + roff(cmd->get_description()) + "\n";
    out += ".SH SYNOPSIS\n" + man_synopsis(*cmd, command);
    out += ".SH DESCRIPTION\n" + roff(cmd->get_description()) + ".\n";
    if (!cmd->get_footer().empty()) out += ".PP\n" + roff(cmd->get_footer()) + "\n";
    if (command.empty()) out += man_commands(app);
    if (!positionals(*cmd).empty()) {
        out += ".SH ARGUMENTS\n";
        argument_list(*cmd, out);
    }
    out += ".SH OPTIONS\n";
    option_list(*cmd, out);
    if (!command.empty()) {
        out += ".SS Global options\n";
        option_list(app, out);
    }
    out += man_actions(*cmd, command);
    out += kManExitStatus;
    out += man_see_also(app, command);
    return out;
}

}  // namespace baton::cli
