// A driver library loaded at run time (NVML, the CUDA driver, NCCL): baton links none of them, so
// the same binary runs on a machine without a GPU and says why a library is missing instead of
// failing to start. One way to open one and to pick its entry points, for every loader.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

#include "core/result.hpp"

namespace baton {

// dlopen(path) with RTLD_NOW | RTLD_LOCAL: the handle, or the loader's own reason (not_found: the
// machine lacks the library or one it needs). A relative name is looked up as the loader does.
Result<void*> open_shared_library(const std::string& path);

// The first of `names` the library exports, as a function pointer of type Fn (newer versions
// first: {"nvmlInit_v2", "nvmlInit"}); `which`, when given, gets the name found. False, `into`
// left alone, when it exports none of them.
template <typename Fn>
bool resolve_symbol(void* handle, Fn& into, std::initializer_list<const char*> names, std::string* which = nullptr) {
    for (const char* n : names) {
        if (void* p = dlsym(handle, n)) {
            into = reinterpret_cast<Fn>(p);
            if (which) *which = n;
            return true;
        }
    }
    return false;
}

}  // namespace baton
