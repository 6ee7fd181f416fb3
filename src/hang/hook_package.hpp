// The Python package baton carries (python/baton, embedded at build time) and writes beside the
// shim's sitecustomize.py (stack_shim.hpp): a job's `import torch` gets its steps measured with no
// package installed (baton/_auto.py), and `import baton.torch` in a job baton started is always
// the hook of the baton that reads its events.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace baton::hang {

struct HookModule {
    std::string_view name;  // "torch": baton/torch.py
    std::string_view text;
};

// Every module of the package, __init__ first.
const std::vector<HookModule>& hook_modules();

// Writes DIR/baton/NAME.py for every module (DIR/baton made `mode` when missing), each file
// replaced atomically and readable by all (the job's processes may run as another user). Errors
// name the path.
Status write_hook_package(const std::string& dir, unsigned mode);

}  // namespace baton::hang
