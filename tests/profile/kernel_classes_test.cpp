// GPU activities named as the libraries name them: each kernel's class and a GEMM's precision, a
// copy's direction and whether its host memory was pageable; an unknown name is `other`.
#include "profile/kernel_classes.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "test_support.hpp"

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
        // The ROCm stack: Tensile/hipBLASLt GEMMs, MIOpen's convolutions and batch norm, RCCL.
        {"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1_AFC1", KernelClass::gemm},
        {"igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt256x128x32_wt32x32x8_ws2x1_wl1x4", KernelClass::conv},
        {"naive_conv_fwd_nchw_float_double_float", KernelClass::conv},
        {"MIOpenBatchNormFwdTrainSpatial", KernelClass::reduction},
        {"void ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", KernelClass::communication},
        // Names that hold two rows' words.
        {"triton_poi_fused_convolution_relu_0", KernelClass::elementwise},
        {"triton_per_fused__native_batch_norm_legit_1", KernelClass::reduction},
        {"cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x64_4x1x1_kernel0_0", KernelClass::attention},
        {"void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_fw_tr_1C11_args<float>)",
         KernelClass::reduction},
        {"void at::native::_scatter_gather_elementwise_kernel<128, 4, at::native::ReduceAdd>(int, ...)",
         KernelClass::elementwise},
        {"void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int, cudnn::reduced_divisor)",
         KernelClass::conv},
        {"void regular_fft<128u, EPT<8u>, 16u, 16u, Radix4<float2>>(unsigned int, float2*)", KernelClass::other},
        {"void fbgemm_gpu::_compute_FP8_quantize_cuda_kernel<float>(float const*, float const*, int)",
         KernelClass::other},
        {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int>>>(Params)",
         KernelClass::gemm},
        {"std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float>(cublasGemvParams)",
         KernelClass::gemm},
        {"my_custom_kernel", KernelClass::other},
        {"", KernelClass::other},
    };
    for (const auto& [name, want] : cases) EXPECT_EQ(kernel_class(name), want) << name;
    EXPECT_STREQ(baton::enum_name(KernelClass::communication), "communication");
}

// Names recorded on A100, V100 and MI250 GPUs by others (tests/fixtures/profile/kernel_names.tsv says
// where from), one of each family, with the class the table gives.
TEST(KernelClasses, RealKernelNamesOfEachVendorLibrary) {
    std::ifstream in(baton::test::fixture_dir() + "/profile/kernel_names.tsv");
    ASSERT_TRUE(in) << "kernel_names.tsv";
    std::map<std::string, int> per_class;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const std::size_t tab = line.find('\t');
        ASSERT_NE(tab, std::string::npos) << line;
        const std::string want = line.substr(0, tab), name = line.substr(tab + 1);
        EXPECT_EQ(baton::enum_name(kernel_class(name)), want) << name;
        ++per_class[want];
    }
    for (const char* c : {"gemm", "conv", "elementwise", "reduction", "communication", "other"})
        EXPECT_GE(per_class[c], 3) << "real names of class " << c;
}

TEST(KernelClasses, AKernelsOwnNameLeavesOutItsReturnTypeTemplateArgumentsAndParameters) {
    EXPECT_EQ(kernel_own_name("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(int)"),
              "at::native::reduce_kernel");
    EXPECT_EQ(kernel_own_name("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, 1>(float*)"),
              "at::native::catarraybatchedcopy");
    EXPECT_EQ(kernel_own_name("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int>(P)"),
              "internal::gemvx::kernel<int");
    EXPECT_EQ(kernel_own_name("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(Params)"),
              "cutlass::kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4");
    EXPECT_EQ(kernel_own_name("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
    EXPECT_EQ(kernel_own_name("_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolution"),
              "_zn19cutlass_cudnn_train6kernelins_4conv6kernel23implicitgemmconvolution");
    EXPECT_EQ(kernel_own_name("fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::Params)"),
              "fmha_cutlassf_f16_aligned_64x64_rf_sm80");
    EXPECT_EQ(kernel_own_name(""), "");
    EXPECT_EQ(kernel_own_name("<<<((("), "");
    EXPECT_EQ(kernel_own_name(std::string(5000, '<')), "") << "unbalanced brackets, cut at 1024 bytes";
}

// docs/profile.md's "Kernel classes" table is the code's: the same rows in the same order, each with
// its words, its signature condition and its class.
TEST(KernelClasses, TheDocumentedTableIsTheOneUsed) {
    std::ifstream doc(baton::test::source_dir() + "/docs/profile.md");
    ASSERT_TRUE(doc);
    std::string line;
    bool in_section = false;
    std::vector<std::string> rows;
    while (std::getline(doc, line)) {
        if (line.rfind("### Kernel classes", 0) == 0)
            in_section = true;
        else if (in_section && line.rfind("#", 0) == 0)
            break;
        else if (in_section && line.rfind("| ", 0) == 0 && line.size() > 2 &&
                 std::isdigit(static_cast<unsigned char>(line[2])))
            rows.push_back(line);
    }
    const auto rules = kernel_rules();
    ASSERT_EQ(rows.size(), rules.size()) << "rows in docs/profile.md's Kernel classes table";
    for (std::size_t i = 0; i < rules.size(); ++i) {
        std::string words;
        for (std::string_view p = rules[i].name_has; !p.empty();) {
            const std::size_t bar = p.find('|');
            words += (words.empty() ? "`" : " `") + std::string(p.substr(0, bar)) + "`";
            if (bar == std::string_view::npos) break;
            p.remove_prefix(bar + 1);
        }
        const std::string signature =
            rules[i].signature_has.empty() ? "" : "`" + std::string(rules[i].signature_has) + "`";
        std::ostringstream want;
        want << "| " << i + 1 << " | " << words << " | " << signature << " | " << baton::enum_name(rules[i].kind)
             << " |";
        EXPECT_EQ(rows[i].substr(0, want.str().size()), want.str()) << "row " << i + 1;
    }
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
    // ROCm's Tensile/hipBLASLt: the data-type field after the layouts.
    EXPECT_EQ(gemm_precision("Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN"), GemmPrecision::fp16);
    EXPECT_EQ(gemm_precision("Cijk_Ailk_Bjlk_BBS_BH_MT64x64x64_MI16x16x16x1_SN"), GemmPrecision::bf16);
    EXPECT_EQ(gemm_precision("Cijk_Alik_Bljk_F8B8S_BH_MT256x256x64_MI16x16x1"), GemmPrecision::fp8);
    EXPECT_EQ(gemm_precision("Cijk_Alik_Bljk_I8II_BH_MT64x64x64_MI32x32x16"), GemmPrecision::int8);
    EXPECT_EQ(gemm_precision("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0"),
              GemmPrecision::unknown)
        << "single precision runs on CDNA's matrix cores: not fp32 without tensor cores";
    EXPECT_EQ(gemm_precision("Cijk_"), GemmPrecision::unknown);
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
