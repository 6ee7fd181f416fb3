// The TOML config: any text is a config or one error naming the file, never a crash (toml++
// 3.3.0 can abort on invalid UTF-8: baton checks the text first).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    baton::Result<baton::Config> c = baton::parse_config(text, "fuzz.toml");
    if (!c.ok() && c.error().message.rfind("fuzz.toml", 0) != 0) std::abort();  // names the file
    return 0;
}
