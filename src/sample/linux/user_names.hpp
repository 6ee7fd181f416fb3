// uid -> user name, looked up once per uid through the C library (so LDAP/NSS users resolve
// as in ls -l) and cached. Unknown uids print as their number.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace baton::os {

class UserNames {
  public:
    const std::string& name(std::uint32_t uid);

  private:
    std::unordered_map<std::uint32_t, std::string> cache_;
};

}  // namespace baton::os
