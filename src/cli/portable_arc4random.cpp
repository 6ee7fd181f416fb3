// Linked only into baton-portable. The static libstdc++ of GCC 12 on Debian 12 reaches
// arc4random (std::random_device, pulled in by its exception classes), which glibc added in
// 2.36: that one symbol would keep the binary off Ubuntu 22.04 (glibc 2.35) and RHEL 9
// (2.34). Defining it here, on top of getrandom(2) (glibc 2.25), lowers the floor to the
// 2.34 that dlopen and pthreads need anyway. baton itself never asks for random numbers.
#include <cstddef>
#include <cstdint>
#include <sys/random.h>

extern "C" std::uint32_t arc4random(void) {
    std::uint32_t v = 0;
    while (getrandom(&v, sizeof v, 0) != static_cast<long>(sizeof v)) {
    }
    return v;
}

// libevent's random numbers (evutil_secure_rng, which evhttp uses for DNS ids) come from
// arc4random_buf, also glibc 2.36.
extern "C" void arc4random_buf(void* buf, std::size_t n) {
    auto* p = static_cast<unsigned char*>(buf);
    while (n > 0) {
        const long got = getrandom(p, n, 0);
        if (got <= 0) continue;
        p += got;
        n -= static_cast<std::size_t>(got);
    }
}
