#include "profile/kernel_classes.hpp"

#include <string>

#include "core/text_parse.hpp"

namespace baton::profile {

namespace {

// A name's first 512 bytes without case (kernel names are template signatures: the words come first).
std::string lower(std::string_view s) {
    return text::ascii_lower(s.substr(0, 512));
}

bool has(const std::string& s, std::string_view part) {
    return s.find(part) != std::string::npos;
}

bool has_any(const std::string& s, std::initializer_list<std::string_view> parts) {
    for (std::string_view p : parts)
        if (has(s, p)) return true;
    return false;
}

}  // namespace

KernelClass kernel_class(std::string_view kernel_name) {
    const std::string n = lower(kernel_name);
    // NCCL's kernels (ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_...): communication first,
    // whatever else the name holds.
    if (has(n, "nccl")) return KernelClass::communication;
    // Flash-attention, CUTLASS's fused multi-head attention (PyTorch's memory-efficient SDPA), xformers.
    if (has_any(n, {"flash_fwd", "flash_bwd", "flash::", "fmha", "attention", "sdpa", "xformers"}))
        return KernelClass::attention;
    // cuDNN's convolutions are implicit GEMMs by name (sm80_xmma_fprop_implicit_gemm_...): before GEMM.
    if (has_any(n, {"conv", "fprop", "dgrad", "wgrad", "winograd", "implicit_gemm"})) return KernelClass::conv;
    // cuBLAS (ampere_sgemm_*, volta_h884gemm_*, sm90_xmma_gemm_*), cuBLASLt on Hopper (nvjet_*), CUTLASS,
    // split-K's reduction, GEMV.
    if (has_any(n, {"gemm", "nvjet", "gemv", "splitkreduce", "cutlass"})) return KernelClass::gemm;
    // Inductor's Triton kernels say what they are: pointwise, reduction, persistent reduction.
    if (has(n, "triton_poi")) return KernelClass::elementwise;
    if (has_any(n, {"triton_red", "triton_per"})) return KernelClass::reduction;
    if (has_any(n, {"reduce", "softmax", "norm_", "layer_norm", "batch_norm", "group_norm", "_norm", "sum_kernel"}))
        return KernelClass::reduction;
    if (has_any(n, {"elementwise", "pointwise", "copy_kernel", "fill_kernel", "cat_", "index_"}))
        return KernelClass::elementwise;
    return KernelClass::other;
}

GemmPrecision precision_of_input_type(std::string_view type) {
    const std::string t = lower(type);
    if (t == "float") return GemmPrecision::fp32_or_tf32;
    if (has(t, "bfloat16")) return GemmPrecision::bf16;
    if (has(t, "half")) return GemmPrecision::fp16;
    if (has(t, "float8")) return GemmPrecision::fp8;
    if (has(t, "char") || has(t, "int8")) return GemmPrecision::int8;
    return GemmPrecision::unknown;
}

GemmPrecision gemm_precision(std::string_view kernel_name) {
    const std::string n = lower(kernel_name);
    // The inputs' type first ("bf16" before "f16", which it holds); then the math: s1688/s16816 is
    // fp32 accumulation on tensor cores, TF32 when no 16-bit input type is named
    // (cutlass_80_tensorop_s1688gemm_*), fp16 when one is (ampere_fp16_s16816gemm_fp16_*).
    if (has_any(n, {"e4m3", "e5m2", "fp8"})) return GemmPrecision::fp8;
    if (has_any(n, {"i8816", "int8", "igemm", "_s8"})) return GemmPrecision::int8;
    if (has(n, "bf16")) return GemmPrecision::bf16;
    if (has_any(n, {"h884gemm", "h1688gemm", "h16816gemm", "hgemm", "f16", "fp16", "half"})) return GemmPrecision::fp16;
    if (has_any(n, {"tf32", "s1688gemm", "s16816gemm"})) return GemmPrecision::tf32;
    // SIMT single precision: no tensor cores at all.
    if (has(n, "sgemm")) return GemmPrecision::fp32;
    return GemmPrecision::unknown;
}

Copy copy_of(std::string_view memcpy_name) {
    const std::string n = lower(memcpy_name);
    Copy c;
    if (has(n, "htod"))
        c.kind = CopyKind::h2d;
    else if (has(n, "dtoh"))
        c.kind = CopyKind::d2h;
    else if (has(n, "dtod"))
        c.kind = CopyKind::d2d;
    else if (has(n, "ptop"))
        c.kind = CopyKind::p2p;
    c.pageable = has(n, "pageable");
    return c;
}

}  // namespace baton::profile
