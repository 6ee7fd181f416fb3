#include "profile/kernel_classes.hpp"

#include <string>

#include "core/text_parse.hpp"

namespace baton::profile {

namespace {

// A name's first 512 bytes without case (kernel names are template signatures: the words come first).
std::string lower(std::string_view s) {
    return text::ascii_lower(s.substr(0, 512));
}

bool has(std::string_view s, std::string_view part) {
    return s.find(part) != std::string_view::npos;
}

bool has_any(const std::string& s, std::initializer_list<std::string_view> parts) {
    for (std::string_view p : parts)
        if (has(s, p)) return true;
    return false;
}

// Whether `s` holds one of the '|'-separated parts of `parts`.
bool has_one_of(std::string_view s, std::string_view parts) {
    while (!parts.empty()) {
        const std::size_t bar = parts.find('|');
        if (has(s, parts.substr(0, bar))) return true;
        if (bar == std::string_view::npos) break;
        parts.remove_prefix(bar + 1);
    }
    return false;
}

// The table, first match wins: the order settles names that hold two words (Inductor's
// "triton_poi_fused_convolution_..." is pointwise, a cuDNN batch norm is not a convolution, a
// convolution's implicit GEMM is not a GEMM). Parts are lower case and matched inside the kernel's own name.
constexpr KernelRule kRules[] = {
    {"nccl|rccl", "", KernelClass::communication, "NCCL, RCCL (ncclKernel_*, ncclDevKernel_*)"},
    {"triton_poi", "", KernelClass::elementwise,
     "Inductor's Triton pointwise kernels (their fused operators' names follow)"},
    {"triton_red|triton_per", "", KernelClass::reduction, "Inductor's Triton (persistent) reductions"},
    {"flash_fwd|flash_bwd|flash::|fmha|attention|attn_fwd|attn_bwd|sdpa|xformers", "", KernelClass::attention,
     "flash-attention, PyTorch's memory-efficient SDPA (fmha_cutlass*), cuDNN's SDPA, xformers"},
    {"bn_fw|bn_bw|batchnorm|batch_norm", "", KernelClass::reduction,
     "batch norm: cuDNN (cudnn::bn_fw_tr_*, bn_bw_*), MIOpen (MIOpenBatchNorm*), ATen"},
    {"nchwtonhwc|nhwctonchw|scalepackedtensor|transpose|permute", "", KernelClass::elementwise,
     "layout changes and scaling around cuDNN's convolutions, transposes"},
    {"fbgemm_gpu::", "", KernelClass::other,
     "FBGEMM's sparse-feature and quantisation kernels (its name holds \"gemm\"; these are not GEMMs)"},
    {"fft", "cudnn", KernelClass::conv, "cuDNN's FFT convolution (fft2d_r2c_*, fft2d_c2r_* with cuDNN's parameters)"},
    {"conv|fprop|dgrad|wgrad|winograd|cudnn|igemm_fwd|igemm_bwd|igemm_wrw", "", KernelClass::conv,
     "cuDNN (scudnn, *_xmma_fprop/dgrad/wgrad_implicit_gemm_*, cask_cudnn*, winograd), CUTLASS's convolutions, "
     "MIOpen (*Conv*, igemm_fwd/bwd/wrw_*)"},
    {"gemm|gemv|nvjet|splitkreduce|cutlass|cublas|epilogue::impl|cijk_|tensile", "", KernelClass::gemm,
     "cuBLAS (*sgemm*, *h884gemm*, sm90_xmma_gemm_*, gemv), cuBLASLt (nvjet_*, its epilogue), CUTLASS, "
     "Tensile and hipBLASLt on ROCm (Cijk_*)"},
    {"elementwise|pointwise", "", KernelClass::elementwise, "ATen's elementwise kernels (before the words below)"},
    {"reduce|softmax|norm|moments|welford|gammabeta|pool|sum_kernel|argmax|argmin", "", KernelClass::reduction,
     "ATen's reductions, softmax, layer/group/RMS norm, pooling"},
    {"copy|fill|catarray|cat_|index|gather|scatter|dropout|multi_tensor_apply|scal_kernel", "",
     KernelClass::elementwise, "ATen's copies, fills, concatenation, indexing, dropout, fused optimizers"},
};

}  // namespace

std::span<const KernelRule> kernel_rules() {
    return kRules;
}

std::string kernel_own_name(std::string_view signature) {
    // "(anonymous namespace)::" is dropped first: its parenthesis is not the parameters'.
    std::string s = text::ascii_lower(signature.substr(0, 1024));
    for (std::size_t at; (at = s.find("(anonymous namespace)::")) != std::string::npos;) s.erase(at, 23);
    // The parameters' '(' and the last space before it, outside template arguments: what lies
    // between is the name with its template arguments (a return type such as
    // "std::enable_if<!(false), void>::type " goes with the space).
    std::size_t depth = 0, params = s.size(), space = std::string::npos;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '<') {
            ++depth;
        } else if (c == '>' && depth > 0) {
            --depth;
        } else if (depth == 0 && c == '(') {
            params = i;
            break;
        } else if (depth == 0 && c == ' ') {
            space = i;
        }
    }
    const std::size_t from = space == std::string::npos ? 0 : space + 1;
    const std::string head = s.substr(from, params - from);
    const std::size_t open = head.find('<');
    std::string name = head.substr(0, open);
    const std::size_t colons = name.rfind("::");
    const std::string_view last =
        colons == std::string::npos ? std::string_view(name) : std::string_view(name).substr(colons + 2);
    if (open != std::string::npos && (last == "kernel" || last == "kernel2" || last == "device_kernel")) {
        const std::size_t arg_end = head.find_first_of("<,>(", open + 1);
        name += head.substr(open, arg_end == std::string::npos ? std::string::npos : arg_end - open);
    }
    return name;
}

KernelClass kernel_class(std::string_view kernel_name) {
    const std::string name = kernel_own_name(kernel_name);
    if (name.empty()) return KernelClass::other;
    std::string signature;  // made only for a row that asks for it
    for (const KernelRule& r : kRules) {
        if (!has_one_of(name, r.name_has)) continue;
        if (!r.signature_has.empty()) {
            if (signature.empty()) signature = lower(kernel_name);
            if (!has(signature, r.signature_has)) continue;
        }
        return r.kind;
    }
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

namespace {

// Tensile's data-type field: the part after "Cijk_A..._B..._" ("HHS_BH": fp16 in and out, fp32
// compute; "BBS": bf16; "F8"/"B8" first: fp8; "I8": int8; "S": single on MFMA, unknown).
GemmPrecision tensile_precision(const std::string& n) {
    std::size_t at = 0;
    for (int field = 0; field < 3 && at != std::string::npos; ++field) at = n.find('_', at + (field ? 1 : 0));
    if (at == std::string::npos) return GemmPrecision::unknown;
    const std::string_view type = std::string_view(n).substr(at + 1, 3);
    if (type.starts_with("f8") || type.starts_with("b8") || type.starts_with("f8b8")) return GemmPrecision::fp8;
    if (type.starts_with("i8")) return GemmPrecision::int8;
    if (type.starts_with("bb") || type.starts_with("bs")) return GemmPrecision::bf16;
    if (type.starts_with("hh") || type.starts_with("hs")) return GemmPrecision::fp16;
    return GemmPrecision::unknown;
}

}  // namespace

GemmPrecision gemm_precision(std::string_view kernel_name) {
    const std::string n = lower(kernel_name);
    if (n.starts_with("cijk_")) return tensile_precision(n);
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
