#include "store/run_state.hpp"

#include <iterator>

namespace baton::store {

namespace {

constexpr const char* kRunStates[] = {"running", "finished", "interrupted"};
constexpr const char* kRunKinds[] = {"run", "bench"};

template <typename E, std::size_t N>
std::optional<E> from_name(const char* const (&names)[N], const std::string& name) {
    for (std::size_t i = 0; i < N; ++i)
        if (name == names[i]) return static_cast<E>(i);
    return std::nullopt;
}

}  // namespace

const char* run_state_name(RunState s) {
    return kRunStates[static_cast<int>(s)];
}

std::optional<RunState> run_state_from_name(const std::string& name) {
    return from_name<RunState>(kRunStates, name);
}

const char* run_kind_name(RunKind k) {
    return kRunKinds[static_cast<int>(k)];
}

std::optional<RunKind> run_kind_from_name(const std::string& name) {
    return from_name<RunKind>(kRunKinds, name);
}

}  // namespace baton::store
