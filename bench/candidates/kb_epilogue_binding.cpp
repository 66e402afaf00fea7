// Binding of the KernelBench candidates' kernels (bench/candidates/kernelbench.py):
// kb_epilogue_forward(x, weight?, bias?, extra?, p0, p1, row_sum) checks its tensors, runs the GEMM
// when a weight is given, and the task's epilogue (compiled into kb_epilogue.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>
#include <optional>

#include "../binding_registry.h"

extern "C" cublasStatus_t kb_gemm_cublas(cublasHandle_t handle, const float* x, const float* w,
                                         float* y, int M, int K, int N, cudaStream_t stream);
extern "C" cudaError_t kb_map_launcher(float* y, const float* src, const float* bias,
                                       const float* extra, int64_t total, int64_t N, float p0,
                                       float p1, cudaStream_t stream);
extern "C" cudaError_t kb_row_sum_launcher(float* out, const float* y, const float* bias,
                                           const float* extra, int64_t M, int64_t N, float p0,
                                           float p1, cudaStream_t stream);

namespace {

void CheckTensor(const torch::Tensor& t, const torch::Tensor& x, const char* what) {
  TORCH_CHECK(t.is_cuda() && t.device() == x.device(), "kb_epilogue: ", what,
              " must be a CUDA tensor on the input's device");
  TORCH_CHECK(t.scalar_type() == torch::kFloat32, "kb_epilogue: ", what, " must be float32");
  TORCH_CHECK(t.is_contiguous(), "kb_epilogue: ", what, " must be contiguous");
}

const float* OptionalVector(const std::optional<torch::Tensor>& t, const torch::Tensor& x,
                            int64_t n, const char* what) {
  if (!t.has_value()) return nullptr;
  CheckTensor(*t, x, what);
  TORCH_CHECK(t->numel() == n, "kb_epilogue: ", what, " must have ", n, " elements");
  return t->data_ptr<float>();
}

torch::Tensor KbEpilogueForward(const torch::Tensor& x, const std::optional<torch::Tensor>& weight,
                                const std::optional<torch::Tensor>& bias,
                                const std::optional<torch::Tensor>& extra, double p0, double p1,
                                bool row_sum) {
  CheckTensor(x, x, "x");
  const c10::cuda::CUDAGuard guard(x.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
  torch::Tensor y;
  int64_t M = 0, N = 0;
  if (weight.has_value()) {
    CheckTensor(*weight, x, "weight");
    TORCH_CHECK(x.dim() == 2 && weight->dim() == 2 && x.size(1) == weight->size(1),
                "kb_epilogue: expected x (M, K) and weight (N, K)");
    M = x.size(0);
    N = weight->size(0);
    const int64_t K = x.size(1);
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    TORCH_CHECK(M <= kIntMax && K <= kIntMax && N <= kIntMax, "kb_epilogue: sizes exceed cuBLAS int");
    y = torch::empty({M, N}, x.options());
    if (M > 0 && N > 0) {
      const cublasStatus_t st =
          kb_gemm_cublas(at::cuda::getCurrentCUDABlasHandle(), x.data_ptr<float>(),
                         weight->data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(M),
                         static_cast<int>(K), static_cast<int>(N), stream);
      TORCH_CHECK(st == CUBLAS_STATUS_SUCCESS, "kb_epilogue: cublasSgemm failed: ",
                  cublasGetStatusString(st));
    }
  } else {
    TORCH_CHECK(!row_sum, "kb_epilogue: a row sum needs a GEMM");
    M = 1;
    N = x.numel();
  }
  const float* b = OptionalVector(bias, x, N, "bias");
  const float* e = OptionalVector(extra, x, N, "extra");
  cudaError_t err = cudaSuccess;
  torch::Tensor out;
  if (row_sum) {
    out = torch::empty({M, 1}, x.options());
    err = kb_row_sum_launcher(out.data_ptr<float>(), y.data_ptr<float>(), b, e, M, N,
                              static_cast<float>(p0), static_cast<float>(p1), stream);
  } else if (weight.has_value()) {
    out = y;
    err = kb_map_launcher(y.data_ptr<float>(), y.data_ptr<float>(), b, e, M * N, N,
                          static_cast<float>(p0), static_cast<float>(p1), stream);
  } else {
    out = torch::empty_like(x);
    err = kb_map_launcher(out.data_ptr<float>(), x.data_ptr<float>(), b, e, N, N,
                          static_cast<float>(p0), static_cast<float>(p1), stream);
  }
  TORCH_CHECK(err == cudaSuccess, "kb_epilogue: launch failed: ", cudaGetErrorString(err));
  return out;
}

void RegisterKbEpilogue(pybind11::module& m) {
  m.def("kb_epilogue_forward", &KbEpilogueForward, py::arg("x"), py::arg("weight"), py::arg("bias"),
        py::arg("extra"), py::arg("p0"), py::arg("p1"), py::arg("row_sum"));
}

}  // namespace

REGISTER_BINDING(kb_epilogue, RegisterKbEpilogue);
