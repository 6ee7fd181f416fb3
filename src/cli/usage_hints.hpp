// Messages for words the command line did not expect: the closest known subcommand or option,
// so that `baton snapshto` answers "unknown command 'snapshto' (did you mean 'snapshot'?)".
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace baton::cli {

// The candidate nearest to `word` (optimal string alignment distance, a swap of two letters
// counting as one edit), when it is near enough to be what was meant: at most 2 edits and
// fewer than half the word's letters, or `word` is the start of exactly one candidate. Empty
// when none is.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

// The one-line message for the words `app` left over after parsing (CLI11's ExtrasError):
// the first of them, named as an unknown command or option of the subcommand it was given to,
// with the closest spelling when there is one. `app` must be the parsed top-level App.
std::string unexpected_words_message(const CLI::App& app);

}  // namespace baton::cli
