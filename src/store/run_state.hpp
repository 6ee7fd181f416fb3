// A recorded run's state and kind: parsed where a row is read, named where it is written (the
// store, JSON, text). No state or kind is a string in logic.
#pragma once

#include <optional>
#include <string>

namespace baton::store {

// running: recording (or its recorder died: a reader that finds the owner gone says interrupted).
enum class RunState { running, finished, interrupted };
const char* run_state_name(RunState s);
std::optional<RunState> run_state_from_name(const std::string& name);

// run: baton run, launch, a queued job; bench: baton bench (its links in bench_links).
enum class RunKind { run, bench };
const char* run_kind_name(RunKind k);
std::optional<RunKind> run_kind_from_name(const std::string& name);

}  // namespace baton::store
