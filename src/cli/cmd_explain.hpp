// `baton explain [RULE]`: a finding's section of docs/findings.md, embedded in the binary at build
// time (findings end with "see: baton explain RULE"; an installed box has no source tree).
#pragma once

#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace baton {
// docs/findings.md as it was when baton was built (generated: cmake/embed_text.cmake).
std::string_view findings_catalogue();
}  // namespace baton

namespace baton::cli {

struct ExplainArgs {
    std::string rule;  // empty: list the rules
};

CLI::App* add_explain_command(CLI::App& app, ExplainArgs& args);
int run_explain(const ExplainArgs& args);

}  // namespace baton::cli
