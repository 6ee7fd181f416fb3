#include "core/shared_library.hpp"

namespace baton {

Result<void*> open_shared_library(const std::string& path) {
    dlerror();  // (a stale error from an earlier call must not be taken for this one's)
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = dlerror();
    return make_error(ErrorCode::not_found, e ? e : "cannot load " + path);
}

}  // namespace baton
