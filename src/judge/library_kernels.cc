// library_kernels.cc — name patterns of cuBLAS/cuDNN kernels and of torch's copy and fill kernels.
#include "judge/library_kernels.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace cuda_agent {
namespace {

std::string Lower(const std::string& s) {
  std::string out = s;
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

bool IsLibraryKernel(const std::string& name) {
  std::string lower = Lower(name);
  static const std::regex kTorch("(at::|c10::|triton|torch::|pytorch)");
  if (std::regex_search(lower, kTorch)) return false;
  // GEMM and convolution kernels as cuBLAS/cuBLASLt/cuDNN name them across architectures, and their
  // helpers (split-K reductions, layout transforms, Winograd/FFT stages).
  static const std::regex kLibrary(
      "(gemm|gemv|xmma|cutlass|cublas|cudnn|conv|winograd|fft|splitk|split_k|nchw|nhwc|implicit|"
      "fprop|"
      "dgrad|wgrad|im2col|cask|^(sm[0-9]+|ampere|volta|turing|hopper|maxwell|blackwell)_)");
  return std::regex_search(lower, kLibrary);
}

bool IsTorchCopyKernel(const std::string& name) {
  // Only torch's own kernels (at::native::...); the names as the profiler demangles them, e.g.
  // "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, ...>(...)"
  // and "void at::native::elementwise_kernel<128, 4, ...direct_copy_kernel_cuda(...)...>(...)".
  // copy_kernel counts only as a whole word: index_copy_kernel and masked_copy are gathers and
  // scatters, not copies.
  if (name.find("at::native::") == std::string::npos) return false;
  static const std::regex kCopy("(FillFunctor|direct_copy_kernel|(^|[^A-Za-z0-9_])copy_kernel)");
  return std::regex_search(name, kCopy);
}

bool IsGeneratedKernel(const std::string& name) {
  std::string lower = Lower(name);
  return lower.find("triton") != std::string::npos || lower.find("inductor") != std::string::npos;
}

bool IsReducedPrecisionLibraryKernel(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // tf32/bf16/f16/fp16/e4m3/e5m2 as tokens, and the tensor-op shapes cuBLAS and cuDNN put in
  // kernel names (s1688 = TF32, h1688/h16816 = half, i8816/imma = int8).
  static const std::regex kReduced(
      "(tf32|bf16|fp16|f16|e4m3|e5m2|hmma|imma|hgmma|igmma|qgmma|[hsi]1688|[hsi]16816|i8816)");
  return std::regex_search(lower, kReduced);
}

}  // namespace cuda_agent
