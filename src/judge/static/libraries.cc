// libraries.cc — library_compute's verdict on cuBLAS and cuDNN names: cuBLAS for GEMM only (and
// the calls that set one up), cuDNN for convolution only (and its descriptors). The other
// libraries (cuBLASLt, curand, thrust, cutlass ...) are refused by name in names.cc.
#include <algorithm>
#include <cctype>

#include "judge/static/source_scan.h"

namespace cuda_agent {
namespace {

// cuBLAS names that are not GEMM but set up a GEMM (handles, streams, modes, errors).
const std::unordered_set<std::string>& CublasSetup() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "cublasCreate cublasCreate_v2 cublasDestroy cublasDestroy_v2 cublasSetStream "
      "cublasSetStream_v2 cublasGetStream cublasGetStream_v2 cublasSetMathMode cublasGetMathMode "
      "cublasSetPointerMode cublasSetPointerMode_v2 cublasGetPointerMode cublasGetPointerMode_v2 "
      "cublasSetWorkspace cublasSetWorkspace_v2 cublasGetStatusString cublasGetStatusName "
      "cublasGetVersion cublasGetVersion_v2 cublasGetProperty"));
  return *set;
}

// cuDNN names that set up a convolution without being one.
const std::unordered_set<std::string>& CudnnSetup() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      "cudnnCreate cudnnDestroy cudnnSetStream cudnnGetStream cudnnGetErrorString cudnnGetVersion "
      "cudnnCreateTensorDescriptor cudnnDestroyTensorDescriptor cudnnSetTensor4dDescriptor "
      "cudnnSetTensor4dDescriptorEx cudnnSetTensorNdDescriptor cudnnSetTensorNdDescriptorEx "
      "cudnnGetTensor4dDescriptor cudnnGetTensorNdDescriptor cudnnCreateFilterDescriptor "
      "cudnnDestroyFilterDescriptor cudnnSetFilter4dDescriptor cudnnSetFilterNdDescriptor"));
  return *set;
}

}  // namespace

std::string LibraryVerdict(const std::string& name) {
  if (StartsWith(name, "cublas") && !StartsWith(name, "cublasLt")) {
    if (EndsWith(name, "_t") || CublasSetup().count(name)) return "";
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (Contains(lower, "gemm")) return "";
    return "cuBLAS may be used for GEMM only (cublas*gemm*), not " + name;
  }
  if (StartsWith(name, "cudnn")) {
    if (EndsWith(name, "_t") || CudnnSetup().count(name)) return "";
    if (Contains(name, "Convolution") && !Contains(name, "BiasActivation") &&
        !Contains(name, "BackwardBias")) {
      return "";
    }
    return "cuDNN may be used for convolutions only, not " + name;
  }
  return "";
}

}  // namespace cuda_agent
