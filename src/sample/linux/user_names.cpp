#include "sample/linux/user_names.hpp"

#include <pwd.h>
#include <vector>

namespace baton::os {

const std::string& UserNames::name(std::uint32_t uid) {
    auto it = cache_.find(uid);
    if (it != cache_.end()) return it->second;
    std::string n = std::to_string(uid);
    passwd pw{};
    passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found && found->pw_name) n = found->pw_name;
    return cache_.emplace(uid, std::move(n)).first->second;
}

}  // namespace baton::os
