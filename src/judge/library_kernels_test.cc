// library_kernels_test.cc — which kernel names count as cuBLAS/cuDNN, which as torch's copies and
// fills, and which say reduced precision.
#include "judge/library_kernels.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

TEST(LibraryKernelsTest, CublasAndCudnnNamesAreLibraryKernels) {
  EXPECT_TRUE(
      IsLibraryKernel("sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_warpgroupsize1x1x1"));
  EXPECT_TRUE(IsLibraryKernel("ampere_sgemm_128x64_nn"));
  EXPECT_TRUE(
      IsLibraryKernel("void cudnn::cnn::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, "
                      "1, false, false, true>(int, int)"));
  EXPECT_TRUE(IsLibraryKernel(
      "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>(Params)"));
  EXPECT_TRUE(
      IsLibraryKernel("void splitKreduce_kernel<32, 16, int, float, float, float, float, true, "
                      "false, false>(cublasSplitKParams<float>)"));
}

TEST(LibraryKernelsTest, TorchKernelsAndPlainNamesAreNot) {
  EXPECT_FALSE(
      IsLibraryKernel("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                      "namespace)::gemm_stub>(int)"));
  EXPECT_FALSE(IsLibraryKernel("triton_poi_fused_relu_0"));
  EXPECT_FALSE(IsLibraryKernel("relu_scale_kernel(float const*, float*, float, long)"));
  EXPECT_FALSE(IsLibraryKernel("void c10::cuda::fill_kernel<float>(float*, long)"));
}

// torch::zeros/full (fill_, zero_) and contiguous()/to(device) launch torch's fill and copy
// kernels: the audit counts them as copies, like memcpys and memsets, not as foreign compute.
TEST(LibraryKernelsTest, TorchFillAndCopyKernelsAreCopies) {
  EXPECT_TRUE(IsTorchCopyKernel(
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
      "at::detail::Array<char*, 1>)"));
  EXPECT_TRUE(IsTorchCopyKernel(
      "void at::native::elementwise_kernel<128, 4, "
      "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::"
      "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
      "const::{lambda(float)#1}>(at::TensorIteratorBase&, ...)::{lambda(int)#1}>(int, ...)"));
  EXPECT_TRUE(IsTorchCopyKernel(
      "void at::native::unrolled_elementwise_kernel<at::native::copy_kernel_cuda(at::"
      "TensorIterator&, bool)::{lambda()#1}::operator()() const::{lambda(float)#1}, "
      "at::detail::Array<char*, 2> >(int, ...)"));
  // Compute kernels of torch are not copies, even when a copy is part of their name.
  EXPECT_FALSE(IsTorchCopyKernel(
      "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
      "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
      "at::native::detail::ClampLimits)::{lambda()#1}, at::detail::Array<char*, 2> >(int, ...)"));
  EXPECT_FALSE(IsTorchCopyKernel(
      "void at::native::index_elementwise_kernel<128, 4, "
      "at::native::gpu_index_kernel<at::native::index_copy_kernel_impl<float>(...)>(int, ...)"));
  EXPECT_FALSE(IsTorchCopyKernel(
      "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, "
      "128, 1>(...)"));
  // Only torch's own kernels: a foreign kernel named like a fill is foreign.
  EXPECT_FALSE(IsTorchCopyKernel("void FillFunctor_kernel(float*, long)"));
  EXPECT_FALSE(IsTorchCopyKernel("copy_kernel(float const*, float*, long)"));
  EXPECT_FALSE(IsLibraryKernel(
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
      "at::detail::Array<char*, 1>)"));
}

// Under kernelbench torch's eager kernels may run, generated ones may not (kernel audit).
TEST(LibraryKernelsTest, TritonAndInductorKernelsAreGenerated) {
  EXPECT_TRUE(IsGeneratedKernel("triton_poi_fused_add_relu_0"));
  EXPECT_TRUE(IsGeneratedKernel("triton_red_fused_sum_1"));
  EXPECT_TRUE(IsGeneratedKernel("triton_tem_fused_mm_0"));
  EXPECT_FALSE(IsGeneratedKernel(
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"));
  EXPECT_FALSE(IsGeneratedKernel("void (anonymous namespace)::softmax_warp_forward<float>"));
  EXPECT_FALSE(IsGeneratedKernel("relu_scale_kernel(float const*, float*, long, float)"));
}

TEST(PrecisionTest, LibraryKernelNamesThatSayReducedPrecision) {
  EXPECT_TRUE(IsReducedPrecisionLibraryKernel(
      "sm90_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize128x128x32"));
  EXPECT_TRUE(IsReducedPrecisionLibraryKernel("ampere_s1688gemm_fp16_128x128_ldg8_f2f_nn"));
  EXPECT_TRUE(IsReducedPrecisionLibraryKernel("sm80_xmma_gemm_bf16bf16_bf16f32_f32_nn_n"));
  EXPECT_TRUE(IsReducedPrecisionLibraryKernel("volta_h884gemm_HMMA_64x64"));
  EXPECT_FALSE(
      IsReducedPrecisionLibraryKernel("sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8"));
  EXPECT_FALSE(IsReducedPrecisionLibraryKernel("ampere_sgemm_128x64_nn"));
  EXPECT_FALSE(
      IsReducedPrecisionLibraryKernel("void cudnn::cnn::implicit_convolve_sgemm<float, 1024, 5>"));
}

}  // namespace
}  // namespace cuda_agent
