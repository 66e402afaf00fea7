#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

extern "C" cublasStatus_t linear_gemm_cublas(cublasHandle_t handle, const float* x, const float* w,
                                             float* y, int M, int K, int N, cudaStream_t stream);
extern "C" cudaError_t bias_gelu_launcher(float* y, const float* b, int64_t M, int64_t N,
                                          int config, cudaStream_t stream);

static torch::Tensor linear_gelu_forward(const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias) {
  TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(),
              "linear_gelu: tensors must be CUDA tensors");
  TORCH_CHECK(x.device() == weight.device() && x.device() == bias.device(),
              "linear_gelu: tensors must be on one device");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
                  bias.scalar_type() == torch::kFloat32,
              "linear_gelu: tensors must be float32");
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1,
              "linear_gelu: expected x (M, K), weight (N, K), bias (N)");
  TORCH_CHECK(x.size(1) == weight.size(1) && weight.size(0) == bias.size(0),
              "linear_gelu: shapes do not match");
  TORCH_CHECK(x.is_contiguous() && weight.is_contiguous() && bias.is_contiguous(),
              "linear_gelu: tensors must be contiguous");
  const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  TORCH_CHECK(M <= kIntMax && K <= kIntMax && N <= kIntMax, "linear_gelu: sizes exceed cuBLAS int");
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor y = torch::empty({M, N}, x.options());
  if (M == 0 || N == 0) return y;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
  // torch's cuBLAS handle for this device and thread (created once by torch, not cached by us).
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
  const cublasStatus_t st = linear_gemm_cublas(handle, x.data_ptr<float>(), weight.data_ptr<float>(),
                                               y.data_ptr<float>(), static_cast<int>(M),
                                               static_cast<int>(K), static_cast<int>(N), stream);
  TORCH_CHECK(st == CUBLAS_STATUS_SUCCESS, "linear_gelu: cublasSgemm failed: ",
              cublasGetStatusString(st));
  const cudaError_t err = bias_gelu_launcher(y.data_ptr<float>(), bias.data_ptr<float>(), M, N,
                                             /*config=*/0, stream);
  TORCH_CHECK(err == cudaSuccess, "linear_gelu: launch failed: ", cudaGetErrorString(err));
  return y;
}

static void register_linear_gelu(pybind11::module& m) {
  m.def("linear_gelu_forward", &linear_gelu_forward, py::arg("x"), py::arg("weight"),
        py::arg("bias"));
}
REGISTER_BINDING(linear_gelu, register_linear_gelu);
