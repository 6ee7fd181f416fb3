// Man pages and shell completions generated from the one CLI definition (the CLI11 App tree that
// main.cpp builds), so they never drift from the flags: `baton completion bash|zsh|fish` and
// `baton man [COMMAND]`. The build runs these to make the installed files (CMakeLists.txt).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace baton::cli {

// A completion script for `shell` ("bash", "zsh" or "fish"): subcommands (and `runs`'
// actions), each command's options with their descriptions where the shell shows them, and file
// names for options that take a path. Empty for an unknown shell.
std::string completion_script(const CLI::App& app, const std::string& shell);

// The roff source of baton(1) when `command` is empty, else of baton-COMMAND(1) ("runs" covers its
// actions). `version` goes in the page footer. Empty when there is no such command.
std::string man_page(const CLI::App& app, const std::string& command, const std::string& version);

// The subcommands a man page is made for (every visible one), in order.
std::vector<std::string> man_page_commands(const CLI::App& app);

}  // namespace baton::cli
