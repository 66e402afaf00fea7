// includes.cc — forbidden_include: only the CUDA toolkit, cuBLAS, cuDNN, cub, the C++ standard
// library (without threads, files, clocks), the binding headers and the candidate's own kernels/
// headers may be included.
#include "builder/extension_builder.h"
#include "judge/static/source_scan.h"

namespace cuda_agent {
namespace {

// The header names a candidate may include; an entry ending in "/" allows a folder.
const std::unordered_set<std::string>& IncludeAllowlist() {
  static const auto* set = new std::unordered_set<std::string>(WordSet(
      // C++ standard library (no <thread>, <future>, <chrono>, <fstream>, <filesystem>, <csignal>).
      "algorithm any array atomic bit bitset cassert cctype cerrno cfloat charconv cinttypes "
      "climits cmath compare complex concepts cstddef cstdint cstdio cstdlib cstring deque "
      "exception functional initializer_list iomanip ios iosfwd iostream istream iterator limits "
      "list map memory new numbers numeric optional ostream queue random ratio set span sstream "
      "stack stdexcept string string_view tuple type_traits typeinfo unordered_map unordered_set "
      "utility valarray variant vector version "
      "assert.h float.h limits.h math.h stddef.h stdint.h stdio.h stdlib.h string.h stdbool.h "
      "inttypes.h "
      // CUDA toolkit.
      "cuda_runtime.h cuda_runtime_api.h cuda.h cudaTypedefs.h cuda_fp16.h cuda_fp16.hpp "
      "cuda_bf16.h cuda_bf16.hpp cuda_fp8.h cuda_fp8.hpp cuda_fp6.h cuda_fp4.h mma.h "
      "cuda_pipeline.h cuda_pipeline_primitives.h cuda_awbarrier.h cuda_awbarrier_primitives.h "
      "cooperative_groups.h device_launch_parameters.h vector_types.h vector_functions.h "
      "math_constants.h device_functions.h driver_types.h cooperative_groups/ cuda/ cub/ "
      "cublas_v2.h cudnn.h "
      // cuFFT's header only declares: every cufft* name is refused by library_compute.
      "cufft.h cufftXt.h "
      // The binding side.
      "pybind11/pybind11.h pybind11/stl.h torch/extension.h torch/types.h torch/python.h "
      "torch/torch.h torch/all.h torch/csrc/utils/pybind.h ATen/ATen.h ATen/Tensor.h "
      "ATen/core/Tensor.h ATen/Dispatch.h ATen/cuda/CUDAContext.h ATen/cuda/Exceptions.h "
      "ATen/AccumulateType.h ATen/OpMathType.h ATen/TensorAccessor.h ATen/core/TensorAccessor.h "
      "ATen/ceil_div.h c10/cuda/ c10/util/ c10/core/ c10/macros/"));
  return *set;
}

bool IncludeAllowed(const std::string& name) {
  const auto& allow = IncludeAllowlist();
  if (allow.count(name)) return true;
  for (size_t slash = name.find('/'); slash != std::string::npos;
       slash = name.find('/', slash + 1)) {
    if (allow.count(name.substr(0, slash + 1))) return true;
  }
  return StartsWith(name, "sm_") && EndsWith(name, ".h");  // sm_60_atomic_functions.h ...
}

// QuotedIncludeIsOwn: a quoted include names one of the candidate's kernels/ files.
bool QuotedIncludeIsOwn(const SourceScan& s, const std::string& target) {
  fs::path rel_dir = fs::path(s.rel).parent_path();
  fs::path inside = (rel_dir / target).lexically_normal();
  auto first = inside.begin();
  if (first == inside.end() || first->string() != "kernels") return false;
  return !s.has_file || s.has_file(inside);
}

}  // namespace

void CheckIncludes(SourceScan& s) {
  for (const Include& inc : s.src.includes) {
    if (inc.directive != "include") {
      s.Emit(kForbiddenInclude, inc.line, "#" + inc.directive + " is not allowed; use #include");
      continue;
    }
    if (inc.computed) {
      s.Emit(kForbiddenInclude, inc.line,
             "a computed #include hides the header from the scan; name the header");
      continue;
    }
    const std::string& t = inc.target;
    bool climbs = false;
    for (const fs::path& part : fs::path(t)) climbs = climbs || part == "..";
    if (!inc.angled) {
      fs::path inside = (fs::path(s.rel).parent_path() / t).lexically_normal();
      if (inside == kBindingHeader || inside == kPlainBindingHeader) continue;
      if (QuotedIncludeIsOwn(s, t) || (!climbs && IncludeAllowed(t))) continue;
      s.Emit(kForbiddenInclude, inc.line,
             "\"" + t + "\" is neither a file of kernels/ nor an allowed header");
      continue;
    }
    if (!climbs && IncludeAllowed(t)) continue;
    s.Emit(kForbiddenInclude, inc.line,
           "<" + t +
               "> is not an allowed header (allowed: the C++ standard library without "
               "threads/files/clocks, the CUDA toolkit, cub, cublas_v2.h, cudnn.h, the torch "
               "binding "
               "headers, your own kernels/ headers)");
  }
}

}  // namespace cuda_agent
