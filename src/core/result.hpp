// Result<T> and Status: the one way a function that can fail says so (design.md, style.md #3).
// Exceptions are kept for what ends the program; module boundaries return Result.
//
// An Error is a one-line message for people and an ErrorCode for callers: a caller that must act
// on the kind of failure (no agent running: start one; the file is not there: use the default)
// tests the code, never the text, so a message can be reworded without breaking a caller
// (LevelDB's Status::IsNotFound()). context() prefixes where it happened and keeps the code.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace baton {

// What kind of failure, for callers that branch on it. Most failures are `failed`: a caller
// that only reports the message needs nothing more. A new code is added when a caller needs it.
enum class ErrorCode {
    failed,             // anything no caller tells apart
    invalid_argument,   // a flag, config value, request or file content that is not acceptable
    not_found,          // a file, program, process, job, run or key that is not there
    not_executable,     // a program that is there but exec refused (EACCES, ENOEXEC): a shell's 126
    permission_denied,  // the kernel or a peer refused (EACCES, EPERM, another user's agent)
    unavailable,        // the service is not running or cannot be reached (no baton agent)
    disconnected,       // the other end went away in the middle of an exchange
    timed_out,          // a deadline passed
};

// The code's name as written in JSON replies and logs ("not_found").
inline const char* error_code_name(ErrorCode code) {
    switch (code) {
        case ErrorCode::failed:
            return "failed";
        case ErrorCode::invalid_argument:
            return "invalid_argument";
        case ErrorCode::not_found:
            return "not_found";
        case ErrorCode::not_executable:
            return "not_executable";
        case ErrorCode::permission_denied:
            return "permission_denied";
        case ErrorCode::unavailable:
            return "unavailable";
        case ErrorCode::disconnected:
            return "disconnected";
        case ErrorCode::timed_out:
            return "timed_out";
    }
    return "failed";
}

// The code named `name` (error_code_name's), nullopt for any other text: a reply from a newer
// agent may carry a code this program does not know, which the caller then treats as `failed`.
inline std::optional<ErrorCode> error_code_from_name(std::string_view name) {
    for (ErrorCode c :
         {ErrorCode::failed, ErrorCode::invalid_argument, ErrorCode::not_found, ErrorCode::not_executable,
          ErrorCode::permission_denied, ErrorCode::unavailable, ErrorCode::disconnected, ErrorCode::timed_out})
        if (name == error_code_name(c)) return c;
    return std::nullopt;
}

// A failure: a human-readable, one-line message and its kind.
struct Error {
    std::string message;
    ErrorCode code = ErrorCode::failed;

    [[nodiscard]] bool is(ErrorCode c) const { return code == c; }
    // The same failure, said with where it happened first: "launch: " + message.
    [[nodiscard]] Error context(std::string_view where) const& {
        return Error{std::string(where) + ": " + message, code};
    }
    [[nodiscard]] Error context(std::string_view where) && {
        message.insert(0, std::string(where) + ": ");
        return std::move(*this);
    }
};

namespace detail {
// A Result read the wrong way round (value() of a failure, error() of a value) is a bug in the
// caller, not a failure to handle: say which and stop, rather than throw std::bad_variant_access
// into a caller that may swallow it.
[[noreturn]] inline void misread_result(const char* what, const std::string& message) {
    std::fprintf(stderr, "baton: internal error: %s%s\n", what, message.c_str());
    std::abort();
}
}  // namespace detail

template <typename T>
class [[nodiscard]] Result {
  public:
    Result(T value) : state_(std::move(value)) {}      // NOLINT: implicit by design
    Result(Error error) : state_(std::move(error)) {}  // NOLINT: implicit by design

    [[nodiscard]] bool ok() const { return state_.index() == 0; }
    explicit operator bool() const { return ok(); }

    // Precondition: ok() (checked: a failed Result read as a value stops the program).
    T& value() {
        if (!ok()) detail::misread_result("the value of a failed result: ", std::get<1>(state_).message);
        return *std::get_if<0>(&state_);
    }
    const T& value() const {
        if (!ok()) detail::misread_result("the value of a failed result: ", std::get<1>(state_).message);
        return *std::get_if<0>(&state_);
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() { return value(); }
    const T& operator*() const { return value(); }

    // The value, or `fallback` when there is none (the error is dropped: for callers that have
    // already said what a failure means).
    T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }

    // Precondition: !ok() (checked, as value()).
    const Error& error() const {
        if (ok()) detail::misread_result("the error of a result that holds a value", "");
        return *std::get_if<1>(&state_);
    }
    [[nodiscard]] bool is(ErrorCode c) const { return !ok() && error().is(c); }

    // This result with `where` before its error's message; a value passes through.
    Result context(std::string_view where) && {
        if (!ok()) return std::move(*std::get_if<1>(&state_)).context(where);
        return std::move(*this);
    }

  private:
    std::variant<T, Error> state_;
};

// Result<void> spelled as a value type.
struct Ok {};
using Status = Result<Ok>;

inline Error make_error(std::string message) {
    return Error{std::move(message), ErrorCode::failed};
}
inline Error make_error(ErrorCode code, std::string message) {
    return Error{std::move(message), code};
}

// "WHAT: REASON" for a failed system call's errno `err`, with its code: not_found for ENOENT,
// permission_denied for EACCES and EPERM, timed_out for ETIMEDOUT, failed for the rest.
inline Error os_error(const std::string& what, int err) {
    const ErrorCode code = err == ENOENT                   ? ErrorCode::not_found
                           : err == EACCES || err == EPERM ? ErrorCode::permission_denied
                           : err == ETIMEDOUT              ? ErrorCode::timed_out
                                                           : ErrorCode::failed;
    return Error{what + ": " + std::strerror(err), code};
}

}  // namespace baton
