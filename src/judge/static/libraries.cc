// libraries.cc — library_compute's verdict on cuBLAS and cuDNN names: cuBLAS for GEMM only (and
// the calls that set one up), cuDNN for convolution only (and its descriptors). The other
// libraries (cuBLASLt, curand, thrust, cutlass ...) are refused by name in names.cc. And which
// CUDA libraries a source uses, for the link (builder/cuda_libraries.h).
#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

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

// The prefix of each library's names and header files, the longer first (cublasLt before cublas).
const std::vector<std::pair<std::string_view, CudaLibrary>>& LibraryPrefixes() {
  static const auto* prefixes = new std::vector<std::pair<std::string_view, CudaLibrary>>{
      {"cublasLt", CudaLibrary::kCublasLt}, {"cublas", CudaLibrary::kCublas},
      {"cudnn", CudaLibrary::kCudnn},       {"curand", CudaLibrary::kCurand},
      {"cufft", CudaLibrary::kCufft},       {"cusparse", CudaLibrary::kCusparse},
      {"cusolver", CudaLibrary::kCusolver}};
  return *prefixes;
}

// LibraryOf: the library whose prefix `name` starts with, if any.
std::optional<CudaLibrary> LibraryOf(std::string_view name) {
  for (const auto& [prefix, library] : LibraryPrefixes()) {
    if (StartsWith(name, prefix)) return library;
  }
  return std::nullopt;
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

CudaLibraries LibrariesUsed(const LexedSource& src) {
  CudaLibraries used;
  for (const Include& inc : src.includes) {
    const std::string header = fs::path(inc.target).filename().string();
    if (std::optional<CudaLibrary> library = LibraryOf(header)) used.insert(*library);
  }
  for (const Token& t : src.tokens) {
    if (!t.IsIdent()) continue;
    if (std::optional<CudaLibrary> library = LibraryOf(t.text)) used.insert(*library);
  }
  return used;
}

}  // namespace cuda_agent
