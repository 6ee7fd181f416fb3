#include "measure/cuda_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>  // header-only (fmt::fmt-header-only)

#include "core/shared_library.hpp"
#include "doctor/facts.hpp"

namespace baton::measure {

namespace {

// One entry point every caller needs; the first one missing is named in `missing`.
template <typename Fn>
bool resolve(void* handle, Fn& into, const char* name, std::string& missing) {
    if (resolve_symbol(handle, into, {name})) return true;
    if (missing.empty()) missing = name;
    return false;
}

std::string from_env(const std::string& given, const char* variable, const char* fallback) {
    if (!given.empty()) return given;
    const char* v = std::getenv(variable);
    return v && *v ? v : fallback;
}

}  // namespace

std::string CudaLibrary::describe(CUresult rc) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (error_name) error_name(rc, &name);
    if (error_string) error_string(rc, &text);
    if (name && text) return fmt::format("{}: {}", name, text);
    if (name) return name;
    return fmt::format("CUDA error {}", rc);
}

Result<CudaLibrary> load_cuda_library(const std::string& given) {
    const std::string path = from_env(given, "BATON_CUDA_LIBRARY", "libcuda.so.1");
    Result<void*> opened = open_shared_library(path);
    if (!opened.ok()) return opened.error().context("no CUDA driver");
    void* h = *opened;
    CudaLibrary L;
    L.handle = h;
    std::string missing;
    resolve(h, L.init, "cuInit", missing);
    resolve(h, L.driver_version, "cuDriverGetVersion", missing);
    resolve(h, L.device_count, "cuDeviceGetCount", missing);
    resolve(h, L.device_get, "cuDeviceGet", missing);
    resolve(h, L.device_name, "cuDeviceGetName", missing);
    resolve(h, L.device_pci_bus_id, "cuDeviceGetPCIBusId", missing);
    resolve(h, L.primary_ctx_retain, "cuDevicePrimaryCtxRetain", missing);
    resolve(h, L.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2", missing);
    resolve(h, L.ctx_set_current, "cuCtxSetCurrent", missing);
    resolve(h, L.mem_alloc, "cuMemAlloc_v2", missing);
    resolve(h, L.mem_free, "cuMemFree_v2", missing);
    resolve(h, L.mem_alloc_host, "cuMemAllocHost_v2", missing);
    resolve(h, L.mem_free_host, "cuMemFreeHost", missing);
    resolve(h, L.memcpy_htod, "cuMemcpyHtoDAsync_v2", missing);
    resolve(h, L.memcpy_dtoh, "cuMemcpyDtoHAsync_v2", missing);
    resolve(h, L.memcpy_dtod, "cuMemcpyDtoDAsync_v2", missing);
    resolve(h, L.stream_create, "cuStreamCreate", missing);
    resolve(h, L.stream_destroy, "cuStreamDestroy_v2", missing);
    resolve(h, L.stream_synchronize, "cuStreamSynchronize", missing);
    resolve(h, L.error_name, "cuGetErrorName", missing);
    resolve(h, L.error_string, "cuGetErrorString", missing);
    if (!missing.empty()) {
        dlclose(h);
        return make_error(fmt::format("the CUDA driver {} lacks {} (a driver older than CUDA 11)", path, missing));
    }
    return L;
}

std::string NcclLibrary::describe(ncclResult_t rc) const {
    const char* s = error_string ? error_string(rc) : nullptr;
    return s ? fmt::format("{} (NCCL error {})", s, rc) : fmt::format("NCCL error {}", rc);
}

Result<NcclLibrary> load_nccl_library(const std::string& given, const std::string& python) {
    std::string path = from_env(given, "BATON_NCCL_LIBRARY", "libnccl.so.2");
    Result<void*> opened = open_shared_library(path);
    if (!opened.ok() && given.empty() && !std::getenv("BATON_NCCL_LIBRARY")) {
        // Not on the loader's path: PyTorch's pip wheels ship their own (nvidia-nccl-cu12).
        const doctor::PythonAnswer a = doctor::run_python(
            python, "import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], 'lib', 'libnccl.so.2'))", 20);
        std::string found = a.out;
        while (!found.empty() && (found.back() == '\n' || found.back() == '\r')) found.pop_back();
        if (a.exit_status == 0 && !found.empty()) {
            if (Result<void*> wheel = open_shared_library(found); wheel.ok()) {
                opened = wheel;
                path = found;
            }
        }
        if (!opened.ok())
            return make_error(ErrorCode::not_found,
                              fmt::format("no NCCL: {}; and {} has no nvidia.nccl package (PyTorch's wheels ship one)",
                                          opened.error().message, python));
    }
    if (!opened.ok()) return opened.error().context("no NCCL");
    void* h = *opened;
    NcclLibrary L;
    L.handle = h;
    L.path = path;
    std::string missing;
    resolve(h, L.get_version, "ncclGetVersion", missing);
    resolve(h, L.comm_init_all, "ncclCommInitAll", missing);
    resolve(h, L.comm_destroy, "ncclCommDestroy", missing);
    resolve(h, L.error_string, "ncclGetErrorString", missing);
    resolve(h, L.group_start, "ncclGroupStart", missing);
    resolve(h, L.group_end, "ncclGroupEnd", missing);
    resolve(h, L.all_reduce, "ncclAllReduce", missing);
    resolve(h, L.all_gather, "ncclAllGather", missing);
    resolve(h, L.reduce_scatter, "ncclReduceScatter", missing);
    resolve(h, L.broadcast, "ncclBroadcast", missing);
    if (!missing.empty()) {
        dlclose(h);
        return make_error(fmt::format("the NCCL library {} lacks {} (NCCL older than 2.0)", path, missing));
    }
    return L;
}

}  // namespace baton::measure
