// Result<T>: the one way a function that can fail says so (design.md, style.md #3).
// Exceptions are kept for what ends the program; module boundaries return Result.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace baton {

// A failure with a human-readable, one-line message.
struct Error {
    std::string message;
};

template <typename T>
class Result {
  public:
    Result(T value) : state_(std::move(value)) {}      // NOLINT: implicit by design
    Result(Error error) : state_(std::move(error)) {}  // NOLINT: implicit by design

    [[nodiscard]] bool ok() const { return state_.index() == 0; }
    explicit operator bool() const { return ok(); }

    // Precondition: ok().
    T& value() { return std::get<0>(state_); }
    const T& value() const { return std::get<0>(state_); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() { return value(); }

    // The value, or `fallback` when there is none (the error is dropped: for callers that have
    // already said what a failure means).
    T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }

    // Precondition: !ok().
    const Error& error() const { return std::get<1>(state_); }

  private:
    std::variant<T, Error> state_;
};

// Result<void> spelled as a value type.
struct Ok {};
using Status = Result<Ok>;

inline Error make_error(std::string message) {
    return Error{std::move(message)};
}

}  // namespace baton
