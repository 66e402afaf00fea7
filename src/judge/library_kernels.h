// library_kernels.h — recognising cuBLAS/cuDNN kernels (and torch's copy and fill kernels) by the
// names the profiler shows, for the kernel audit (HACKS C1, C3) and the precision check (B11). Only
// the candidate's own kernels (judged by the built extension's contents, build/binary_inspector.h)
// and these may run.
#pragma once

#include <string>

namespace cuda_agent {

// IsLibraryKernel: a kernel name of cuBLAS, cuBLASLt or cuDNN ("sm90_xmma_gemm_...",
// "ampere_sgemm_128x64_nn", "cudnn::cnn::implicit_convolve_sgemm<...>", "cutlass::Kernel<...>").
// PyTorch's own kernels (at::, c10::, triton) never are.
bool IsLibraryKernel(const std::string& name);

// IsTorchCopyKernel: one of PyTorch's own copy or fill kernels, which move or set data without
// computing: fills (at::native::FillFunctor, what torch::zeros/ones/full and zero_/fill_ launch)
// and plain copies (at::native::direct_copy_kernel_cuda, copy_kernel: contiguous(), to(device)).
// The kernel audit counts them with memcpys and memsets, never as the candidate's own work.
bool IsTorchCopyKernel(const std::string& name);

// IsGeneratedKernel: a kernel that a compiler generated at run time rather than the candidate or
// torch's eager operators — Triton's and torch.compile's (Inductor's "triton_poi_fused_add_0",
// "triton_red_fused_sum_1"). Under a policy that lets torch compute (kernelbench) every other
// kernel that is not the candidate's counts as torch's.
bool IsGeneratedKernel(const std::string& name);

// IsReducedPrecisionLibraryKernel: a library kernel name that says it computes on TF32, half,
// bfloat16, int8 or fp8 inputs ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n...", "...h1688gemm...").
bool IsReducedPrecisionLibraryKernel(const std::string& name);

}  // namespace cuda_agent
