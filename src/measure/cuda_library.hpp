// The CUDA driver API and NCCL, loaded with dlopen like NVML (design.md): our own declarations of
// the few entry points the benches use, no CUDA headers or libraries at build time, and the same
// binary on a machine without them (the bench is then skipped with one line saying why).
#pragma once

#include <cstddef>
#include <string>

#include "core/result.hpp"

namespace baton::measure {

// The CUDA driver API's types, as cuda.h declares them (ABI-stable since CUDA 4).
using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUdeviceptr = unsigned long long;
using CUstream = struct CUstream_st*;
inline constexpr CUresult CUDA_SUCCESS = 0;

struct CudaLibrary {
    void* handle = nullptr;
    CUresult (*init)(unsigned) = nullptr;                           // cuInit
    CUresult (*driver_version)(int*) = nullptr;                     // cuDriverGetVersion
    CUresult (*device_count)(int*) = nullptr;                       // cuDeviceGetCount
    CUresult (*device_get)(CUdevice*, int) = nullptr;               // cuDeviceGet
    CUresult (*device_name)(char*, int, CUdevice) = nullptr;        // cuDeviceGetName
    CUresult (*device_pci_bus_id)(char*, int, CUdevice) = nullptr;  // cuDeviceGetPCIBusId
    CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
    CUresult (*primary_ctx_release)(CUdevice) = nullptr;  // cuDevicePrimaryCtxRelease_v2
    CUresult (*ctx_set_current)(CUcontext) = nullptr;
    CUresult (*mem_alloc)(CUdeviceptr*, std::size_t) = nullptr;  // cuMemAlloc_v2
    CUresult (*mem_free)(CUdeviceptr) = nullptr;                 // cuMemFree_v2
    CUresult (*mem_alloc_host)(void**, std::size_t) = nullptr;   // cuMemAllocHost_v2: pinned
    CUresult (*mem_free_host)(void*) = nullptr;
    CUresult (*memcpy_htod)(CUdeviceptr, const void*, std::size_t, CUstream) = nullptr;  // cuMemcpyHtoDAsync_v2
    CUresult (*memcpy_dtoh)(void*, CUdeviceptr, std::size_t, CUstream) = nullptr;        // cuMemcpyDtoHAsync_v2
    CUresult (*memcpy_dtod)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream) = nullptr;  // cuMemcpyDtoDAsync_v2
    CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
    CUresult (*stream_destroy)(CUstream) = nullptr;  // cuStreamDestroy_v2
    CUresult (*stream_synchronize)(CUstream) = nullptr;
    CUresult (*error_name)(CUresult, const char**) = nullptr;    // cuGetErrorName
    CUresult (*error_string)(CUresult, const char**) = nullptr;  // cuGetErrorString

    // "CUDA_ERROR_OUT_OF_MEMORY: out of memory" (the code alone when the library has no words).
    std::string describe(CUresult rc) const;
};

// dlopens `path` (empty: $BATON_CUDA_LIBRARY, else "libcuda.so.1") and resolves every entry
// point. Errors: "no CUDA driver: libcuda.so.1 not found (...)", or the symbol that is missing.
Result<CudaLibrary> load_cuda_library(const std::string& path);

// NCCL's types (nccl.h).
using ncclResult_t = int;
using ncclComm_t = struct ncclComm*;
inline constexpr int ncclFloat32 = 7;
inline constexpr int ncclSum = 0;

struct NcclLibrary {
    void* handle = nullptr;
    std::string path;  // where it was found
    ncclResult_t (*get_version)(int*) = nullptr;
    ncclResult_t (*comm_init_all)(ncclComm_t*, int, const int*) = nullptr;
    ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
    const char* (*error_string)(ncclResult_t) = nullptr;
    ncclResult_t (*group_start)() = nullptr;
    ncclResult_t (*group_end)() = nullptr;
    ncclResult_t (*all_reduce)(const void*, void*, std::size_t, int, int, ncclComm_t, CUstream) = nullptr;
    ncclResult_t (*all_gather)(const void*, void*, std::size_t, int, ncclComm_t, CUstream) = nullptr;
    ncclResult_t (*reduce_scatter)(const void*, void*, std::size_t, int, int, ncclComm_t, CUstream) = nullptr;
    ncclResult_t (*broadcast)(const void*, void*, std::size_t, int, int, ncclComm_t, CUstream) = nullptr;

    std::string describe(ncclResult_t rc) const;  // "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
};

// dlopens `path`; empty: $BATON_NCCL_LIBRARY, else "libnccl.so.2" from the loader's path, else the
// copy PyTorch's wheels ship (site-packages/nvidia/nccl/lib/libnccl.so.2 of `python`).
// Error: "no NCCL: libnccl.so.2 not found (...)".
Result<NcclLibrary> load_nccl_library(const std::string& path, const std::string& python);

}  // namespace baton::measure
