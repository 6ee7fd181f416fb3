// A fake libcuda.so.1: the CUDA driver API entry points baton's benches use, over host memory,
// with copies that take as long as a link of $BATON_FAKE_CUDA_GBPS would (0 or unset: memcpy's
// own speed). Also steered by the environment:
//   BATON_FAKE_CUDA_DEVICES   how many GPUs (default 1)
//   BATON_FAKE_CUDA_BUS_IDS   their PCI bus ids, comma-separated (default 0000:01:00.0, 0000:02:00.0, ...)
//   BATON_FAKE_CUDA_FAIL      NAME:CODE: the call NAME returns CODE (e.g. cuMemAlloc_v2:2)
//   BATON_FAKE_CUDA_HANG      NAME: the call NAME never returns
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using CUresult = int;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// The failure or hang the environment asks of `name`; 0 otherwise.
CUresult steer(const char* name) {
    if (env("BATON_FAKE_CUDA_HANG") == name)
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    const std::string fail = env("BATON_FAKE_CUDA_FAIL");
    const std::size_t colon = fail.find(':');
    if (colon != std::string::npos && fail.substr(0, colon) == name) return std::atoi(fail.c_str() + colon + 1);
    return 0;
}

int device_count() {
    const std::string n = env("BATON_FAKE_CUDA_DEVICES");
    return n.empty() ? 1 : std::atoi(n.c_str());
}

std::string bus_id(int dev) {
    std::string list = env("BATON_FAKE_CUDA_BUS_IDS");
    for (int i = 0; !list.empty(); ++i) {
        const std::size_t comma = list.find(',');
        if (i == dev) return list.substr(0, comma);
        if (comma == std::string::npos) break;
        list = list.substr(comma + 1);
    }
    char b[32];
    std::snprintf(b, sizeof b, "0000:%02X:00.0", dev + 1);
    return b;
}

// A copy of `bytes` that lasts as long as the emulated link takes to move `weight` x bytes.
void copy(void* to, const void* from, std::size_t bytes, double weight = 1) {
    const auto start = std::chrono::steady_clock::now();
    std::memmove(to, from, bytes);
    const double gbps = std::atof(env("BATON_FAKE_CUDA_GBPS").c_str());
    if (gbps > 0)
        std::this_thread::sleep_until(
            start + std::chrono::duration<double>(weight * static_cast<double>(bytes) / (gbps * 1e9)));
}

thread_local int current_device = -1;

}  // namespace

#define FAKE extern "C" __attribute__((visibility("default")))
#define STEER(name) \
    if (CUresult rc = steer(name); rc != 0) return rc;

FAKE CUresult cuInit(unsigned) {
    STEER("cuInit");
    return 0;
}
FAKE CUresult cuDriverGetVersion(int* v) {
    *v = 12040;
    return 0;
}
FAKE CUresult cuDeviceGetCount(int* n) {
    STEER("cuDeviceGetCount");
    *n = device_count();
    return 0;
}
FAKE CUresult cuDeviceGet(int* d, int i) {
    if (i < 0 || i >= device_count()) return 101;  // CUDA_ERROR_INVALID_DEVICE
    *d = i;
    return 0;
}
FAKE CUresult cuDeviceGetName(char* name, int len, int d) {
    std::snprintf(name, static_cast<std::size_t>(len), "Fake GPU %d", d);
    return 0;
}
FAKE CUresult cuDeviceGetPCIBusId(char* id, int len, int d) {
    std::snprintf(id, static_cast<std::size_t>(len), "%s", bus_id(d).c_str());
    return 0;
}
FAKE CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) {
    STEER("cuDevicePrimaryCtxRetain");
    *ctx = reinterpret_cast<void*>(static_cast<std::uintptr_t>(d + 1));
    return 0;
}
FAKE CUresult cuDevicePrimaryCtxRelease_v2(int) {
    return 0;
}
FAKE CUresult cuCtxSetCurrent(void* ctx) {
    current_device = static_cast<int>(reinterpret_cast<std::uintptr_t>(ctx)) - 1;
    return 0;
}
FAKE CUresult cuMemAlloc_v2(unsigned long long* p, std::size_t bytes) {
    STEER("cuMemAlloc_v2");
    if (current_device < 0) return 201;  // CUDA_ERROR_INVALID_CONTEXT
    *p = reinterpret_cast<unsigned long long>(std::malloc(bytes));
    return *p ? 0 : 2;
}
FAKE CUresult cuMemFree_v2(unsigned long long p) {
    std::free(reinterpret_cast<void*>(p));
    return 0;
}
FAKE CUresult cuMemAllocHost_v2(void** p, std::size_t bytes) {
    STEER("cuMemAllocHost_v2");
    *p = std::malloc(bytes);
    return *p ? 0 : 2;
}
FAKE CUresult cuMemFreeHost(void* p) {
    std::free(p);
    return 0;
}
FAKE CUresult cuMemcpyHtoDAsync_v2(unsigned long long to, const void* from, std::size_t bytes, void*) {
    STEER("cuMemcpyHtoDAsync_v2");
    copy(reinterpret_cast<void*>(to), from, bytes);
    return 0;
}
FAKE CUresult cuMemcpyDtoHAsync_v2(void* to, unsigned long long from, std::size_t bytes, void*) {
    STEER("cuMemcpyDtoHAsync_v2");
    copy(to, reinterpret_cast<const void*>(from), bytes);
    return 0;
}
FAKE CUresult cuMemcpyDtoDAsync_v2(unsigned long long to, unsigned long long from, std::size_t bytes, void*) {
    STEER("cuMemcpyDtoDAsync_v2");
    copy(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), bytes, 2);  // reads and writes device memory
    return 0;
}
FAKE CUresult cuStreamCreate(void** s, unsigned) {
    STEER("cuStreamCreate");
    *s = std::malloc(1);
    return 0;
}
FAKE CUresult cuStreamDestroy_v2(void* s) {
    std::free(s);
    return 0;
}
FAKE CUresult cuStreamSynchronize(void*) {
    STEER("cuStreamSynchronize");
    return 0;
}
FAKE CUresult cuGetErrorName(CUresult rc, const char** s) {
    switch (rc) {
        case 2:
            *s = "CUDA_ERROR_OUT_OF_MEMORY";
            return 0;
        case 100:
            *s = "CUDA_ERROR_NO_DEVICE";
            return 0;
        case 101:
            *s = "CUDA_ERROR_INVALID_DEVICE";
            return 0;
        case 201:
            *s = "CUDA_ERROR_INVALID_CONTEXT";
            return 0;
        case 999:
            *s = "CUDA_ERROR_UNKNOWN";
            return 0;
        default:
            *s = nullptr;
            return 1;
    }
}
FAKE CUresult cuGetErrorString(CUresult rc, const char** s) {
    switch (rc) {
        case 2:
            *s = "out of memory";
            return 0;
        case 100:
            *s = "no CUDA-capable device is detected";
            return 0;
        case 101:
            *s = "invalid device ordinal";
            return 0;
        case 201:
            *s = "invalid device context";
            return 0;
        case 999:
            *s = "unknown error";
            return 0;
        default:
            *s = nullptr;
            return 1;
    }
}
