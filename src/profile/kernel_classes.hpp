// What a GPU activity of a trace is, from its name alone (issue 33's breakdown of a step): a kernel's
// class (matrix multiply, convolution, attention, elementwise, reduction, communication, other) and
// the precision a GEMM kernel's name says, and a memcpy's direction and whether its host memory was
// pageable. Kernel names are the libraries' (cuBLAS, cuDNN, CUTLASS, flash-attention, NCCL,
// PyTorch's own ATen kernels); a name baton does not know is `other`, never a guess. Pure.
#pragma once

#include <array>
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

KernelClass kernel_class(std::string_view kernel_name);

// What a GEMM kernel's name says of its precision: fp32 (SIMT sgemm, no tensor cores), tf32, fp16,
// bf16, fp8, int8; unknown when it does not say. fp32_or_tf32: the name does not say, the operator
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
