// cuda_libraries.h — the CUDA libraries a candidate's extension may be linked against, named once.
// The static scan (judge/static/libraries.cc) says which of them a candidate uses, from the headers
// it includes and the names it uses (never from comments or strings); the builder links exactly
// those, after torch's own libraries (builder/extension_builder.h).
//
//   CudaLibraries used = {CudaLibrary::kCublas};
//   for (const std::string& name : LinkNames(used)) argv.push_back("-l" + name);  // -lcublas
#pragma once

#include <set>
#include <string>
#include <vector>

namespace cuda_agent {

// CudaLibrary: a library of the CUDA toolkit a candidate may call (the static rules allow cuBLAS
// for GEMM and cuDNN for convolution; the others are refused by name, but a judgement without the
// rules still links what the candidate uses).
enum class CudaLibrary { kCublas, kCublasLt, kCudnn, kCurand, kCufft, kCusparse, kCusolver };

using CudaLibraries = std::set<CudaLibrary>;

// CudaLibraryInfo: one library's names.
struct CudaLibraryInfo {
  CudaLibrary library;
  const char* link_name;  // lib<link_name>.so, linked with -l<link_name>: "cublas"
  const char* shown;      // as its documentation writes it: "cuBLAS"
};

// CudaLibraryTable: every CudaLibrary, in the order they are linked.
const std::vector<CudaLibraryInfo>& CudaLibraryTable();

// LinkNames: the -l names of `libraries`, in the table's order.
std::vector<std::string> LinkNames(const CudaLibraries& libraries);

}  // namespace cuda_agent
