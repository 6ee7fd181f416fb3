// What a GPU activity of a trace is, from its name alone (the breakdown of a step): a kernel's
// class (matrix multiply, convolution, attention, elementwise, reduction, communication, other) and
// the precision a GEMM kernel's name says, and a memcpy's direction and whether its host memory was
// pageable. Kernel names are the libraries' (cuBLAS, cuBLASLt, cuDNN, CUTLASS, flash-attention,
// NCCL, PyTorch's own ATen kernels, Triton; on ROCm: Tensile/hipBLASLt, MIOpen, RCCL); a name baton
// does not know is `other`, never a guess. Pure.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>

#include "core/enum_names.hpp"

namespace baton::profile {

enum class KernelClass { gemm, conv, attention, elementwise, reduction, communication, other };

}  // namespace baton::profile

// "gemm", "conv", ... (enum_name)
template <>
struct baton::EnumNames<baton::profile::KernelClass> {
    static constexpr std::array list = {"gemm",      "conv",          "attention", "elementwise",
                                        "reduction", "communication", "other"};
};

namespace baton::profile {

// One row of the classification table (docs/profile.md, "Kernel classes", prints it whole): a
// kernel whose own name (kernel_own_name) holds one of `name_has`'s '|'-separated parts, and whose
// whole signature holds `signature_has` when that is not empty, is of class `kind`. The first row
// that matches wins; no row: other.
struct KernelRule {
    std::string_view name_has;
    std::string_view signature_has;
    KernelClass kind;
    std::string_view whose;  // the libraries whose kernels the row names, for the docs
};
std::span<const KernelRule> kernel_rules();

// A kernel's own name, lower case: the function's qualified name without its return type, template
// arguments and parameters ("void at::native::reduce_kernel<512, 1, ...>(...)" ->
// "at::native::reduce_kernel"), so that what its template arguments mention (a reduce functor in a
// gather's signature, cuDNN in an FFT's) does not decide. A generic wrapper (CUTLASS's
// Kernel/Kernel2/device_kernel) keeps its first template argument, which names the real kernel
// ("cutlass::kernel<cutlass_80_tensorop_s1688gemm_..."); "(anonymous namespace)::" is dropped; a
// mangled name (_ZN...) is kept as it is.
std::string kernel_own_name(std::string_view signature);

KernelClass kernel_class(std::string_view kernel_name);

// What a GEMM kernel's name says of its precision: fp32 (SIMT sgemm, no tensor cores), tf32, fp16,
// bf16, fp8, int8; unknown when it does not say. ROCm's Tensile/hipBLASLt kernels (Cijk_...) say it
// in their data-type field (HHS: fp16, BBS: bf16, F8: fp8, I8: int8); their single precision
// (S) runs on the matrix cores of CDNA (MFMA) and is left unknown rather than called fp32-without-
// tensor-cores. fp32_or_tf32: the name does not say, the operator
// that launched it had float inputs (TF32 or not depends on allow_tf32: cuBLASLt's nvjet_* names
// do not tell).
enum class GemmPrecision { unknown, fp32, tf32, fp16, bf16, fp8, int8, fp32_or_tf32 };

}  // namespace baton::profile

template <>
struct baton::EnumNames<baton::profile::GemmPrecision> {
    static constexpr std::array list = {"unknown", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp32_or_tf32"};
};

namespace baton::profile {

constexpr std::size_t kGemmPrecisions = EnumNames<GemmPrecision>::list.size();
GemmPrecision gemm_precision(std::string_view kernel_name);
// The precision of an operator's first input type as the trace's "Input type" writes it ("float",
// "c10::BFloat16", "c10::Half", "c10::Float8_e4m3fn"); unknown for others.
GemmPrecision precision_of_input_type(std::string_view type);

// A copy as the CUDA profiler names it: "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device ->
// Pinned)", "Memcpy DtoD (Device -> Device)", "Memcpy PtoP ...".
enum class CopyKind { h2d, d2h, d2d, p2p, other };
struct Copy {
    CopyKind kind = CopyKind::other;
    bool pageable = false;  // the host side is pageable memory (a staged, synchronous-ish copy)
};
Copy copy_of(std::string_view memcpy_name);

}  // namespace baton::profile

template <>
struct baton::EnumNames<baton::profile::CopyKind> {
    static constexpr std::array list = {"h2d", "d2h", "d2d", "p2p", "other"};
};
