// Enums that leave the program by name (JSON, the store, labels) and are parsed back where they
// enter: an enum E with values 0..N-1 gives its names, in order, in EnumNames<E>::list. The one
// place each name is spelled; logic compares enum values, never names.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

template <class E>
struct EnumNames;  // specialised beside each enum: static constexpr std::array<const char*, N> list

template <class E>
concept NamedEnum = requires {
    EnumNames<E>::list;
};

template <NamedEnum E>
constexpr const char* enum_name(E e) {
    const auto i = static_cast<std::size_t>(e);
    return i < EnumNames<E>::list.size() ? EnumNames<E>::list[i] : "unknown";
}

template <NamedEnum E>
constexpr std::optional<E> enum_from_name(std::string_view name) {
    for (std::size_t i = 0; i < EnumNames<E>::list.size(); ++i)
        if (name == EnumNames<E>::list[i]) return static_cast<E>(i);
    return std::nullopt;
}

// "compute or graphics", "default, exclusive_thread, prohibited or exclusive_process": for errors.
template <NamedEnum E>
std::string enum_choices() {
    std::string out;
    const std::size_t n = EnumNames<E>::list.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (i) out += i + 1 == n ? " or " : ", ";
        out += EnumNames<E>::list[i];
    }
    return out;
}

}  // namespace baton
