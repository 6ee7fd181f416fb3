// GPU activities named as the libraries name them: each kernel's class and a GEMM's precision, a
// copy's direction and whether its host memory was pageable; an unknown name is `other`.
#include "profile/kernel_classes.hpp"

#include <gtest/gtest.h>

using namespace baton::profile;

TEST(KernelClasses, EachLibrarysKernelsByName) {
    const std::pair<const char*, KernelClass> cases[] = {
        {"ampere_sgemm_128x64_nn", KernelClass::gemm},
        {"volta_h884gemm_64x64_ldg8_nn", KernelClass::gemm},
        {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", KernelClass::gemm},
        {"nvjet_tst_128x192_64x5_2x1_v_bz_coopA_TNT", KernelClass::gemm},
        {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(Params)", KernelClass::gemm},
        {"void splitKreduce_kernel<32, 16, int, float, float>(...)", KernelClass::gemm},
        {"sm80_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nhwc", KernelClass::conv},
        {"void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(...)", KernelClass::conv},
        {"void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(...)",
         KernelClass::conv},
        {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>(Flash_fwd_params)",
         KernelClass::attention},
        {"fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>::Params)",
         KernelClass::attention},
        {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", KernelClass::communication},
        {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", KernelClass::communication},
        {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>(...)",
         KernelClass::elementwise},
        {"triton_poi_fused_add_mul_0", KernelClass::elementwise},
        {"triton_red_fused_sum_1", KernelClass::reduction},
        {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, ...>>(...)", KernelClass::reduction},
        {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>(...)",
         KernelClass::reduction},
        {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(...)",
         KernelClass::reduction},
        {"my_custom_kernel", KernelClass::other},
        {"", KernelClass::other},
    };
    for (const auto& [name, want] : cases) EXPECT_EQ(kernel_class(name), want) << name;
    EXPECT_STREQ(baton::enum_name(KernelClass::communication), "communication");
}

TEST(KernelClasses, TheGemmPrecisionTheNameSays) {
    EXPECT_EQ(gemm_precision("ampere_sgemm_128x64_nn"), GemmPrecision::fp32) << "SIMT: no tensor cores";
    EXPECT_EQ(gemm_precision("cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4"), GemmPrecision::tf32);
    EXPECT_EQ(gemm_precision("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"), GemmPrecision::tf32);
    EXPECT_EQ(gemm_precision("volta_h884gemm_64x64_ldg8_nn"), GemmPrecision::fp16);
    EXPECT_EQ(gemm_precision("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"), GemmPrecision::fp16)
        << "fp16 inputs: the s16816 math is the tensor cores'";
    EXPECT_EQ(gemm_precision("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"), GemmPrecision::bf16);
    EXPECT_EQ(gemm_precision("sm90_xmma_gemm_e4m3e4m3_bf16f32_f32_tn_n"), GemmPrecision::fp8);
    EXPECT_EQ(gemm_precision("nvjet_tst_128x192_64x5_2x1_v_bz_coopA_TNT"), GemmPrecision::unknown);
}

TEST(KernelClasses, CopiesByDirectionAndPageableHostMemory) {
    Copy c = copy_of("Memcpy HtoD (Pageable -> Device)");
    EXPECT_EQ(c.kind, CopyKind::h2d);
    EXPECT_TRUE(c.pageable);
    c = copy_of("Memcpy HtoD (Pinned -> Device)");
    EXPECT_EQ(c.kind, CopyKind::h2d);
    EXPECT_FALSE(c.pageable);
    c = copy_of("Memcpy DtoH (Device -> Pageable)");
    EXPECT_EQ(c.kind, CopyKind::d2h);
    EXPECT_TRUE(c.pageable);
    EXPECT_EQ(copy_of("Memcpy DtoD (Device -> Device)").kind, CopyKind::d2d);
    EXPECT_EQ(copy_of("Memcpy PtoP (Device -> Device)").kind, CopyKind::p2p);
    EXPECT_EQ(copy_of("Memset (Device)").kind, CopyKind::other);
    EXPECT_STREQ(baton::enum_name(CopyKind::h2d), "h2d");
}

TEST(KernelClasses, AnOperatorsInputTypeAsAPrecision) {
    EXPECT_EQ(precision_of_input_type("float"), GemmPrecision::fp32_or_tf32);
    EXPECT_EQ(precision_of_input_type("c10::BFloat16"), GemmPrecision::bf16);
    EXPECT_EQ(precision_of_input_type("c10::Half"), GemmPrecision::fp16);
    EXPECT_EQ(precision_of_input_type("c10::Float8_e4m3fn"), GemmPrecision::fp8);
    EXPECT_EQ(precision_of_input_type("double"), GemmPrecision::unknown);
    EXPECT_EQ(precision_of_input_type(""), GemmPrecision::unknown);
    EXPECT_STREQ(baton::enum_name(GemmPrecision::fp32_or_tf32), "fp32_or_tf32");
}
