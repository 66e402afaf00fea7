// cuda_libraries.cc — the table of linkable CUDA libraries.
#include "builder/cuda_libraries.h"

namespace cuda_agent {

const std::vector<CudaLibraryInfo>& CudaLibraryTable() {
  static const auto* table = new std::vector<CudaLibraryInfo>{
      {CudaLibrary::kCublas, "cublas", "cuBLAS"},
      {CudaLibrary::kCublasLt, "cublasLt", "cuBLASLt"},
      {CudaLibrary::kCudnn, "cudnn", "cuDNN"},
      {CudaLibrary::kCurand, "curand", "cuRAND"},
      {CudaLibrary::kCufft, "cufft", "cuFFT"},
      {CudaLibrary::kCusparse, "cusparse", "cuSPARSE"},
      {CudaLibrary::kCusolver, "cusolver", "cuSOLVER"},
  };
  return *table;
}

std::vector<std::string> LinkNames(const CudaLibraries& libraries) {
  std::vector<std::string> names;
  for (const CudaLibraryInfo& info : CudaLibraryTable()) {
    if (libraries.count(info.library) > 0) names.emplace_back(info.link_name);
  }
  return names;
}

}  // namespace cuda_agent
