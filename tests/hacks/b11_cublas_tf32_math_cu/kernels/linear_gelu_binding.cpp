#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

extern "C" cudaError_t bias_gelu_launcher(float* y, const float* b, int64_t M, int64_t N, int config,
                                          cudaStream_t stream);

// y = gelu_tanh(x @ w^T + b): cublasSgemm for the GEMM, then the candidate's epilogue kernel.
// The downgrade (B11): the handle is switched to CUBLAS_TF32_TENSOR_OP_MATH before the call, so the
// "fp32" Sgemm runs on tensor cores with TF32 inputs. The call is still named Sgemm and no torch
// flag (allow_tf32) changes.
static torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor weight,
                                         torch::Tensor bias) {
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
  TORCH_CHECK(M < std::numeric_limits<int>::max() && K < std::numeric_limits<int>::max() &&
                  N < std::numeric_limits<int>::max(),
              "linear_gelu: sizes too large for cuBLAS's int arguments");
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor y = torch::empty({M, N}, x.options());
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();

  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
  TORCH_CHECK(cublasSetStream(handle, stream) == CUBLAS_STATUS_SUCCESS, "cublasSetStream failed");
  TORCH_CHECK(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS,
              "cublasSetMathMode failed");
  // Row-major y (M, N) is column-major y^T (N, M) = w (N, K) x^T (K, M): with column-major views,
  // A = w^T stored (K, N), transposed; B = x^T stored (K, M), as is.
  const float alpha = 1.0f;
  const float beta = 0.0f;
  cublasStatus_t status = cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K,
                                      &alpha, weight.data_ptr<float>(), (int)K, x.data_ptr<float>(),
                                      (int)K, &beta, y.data_ptr<float>(), (int)N);
  TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "linear_gelu: cublasSgemm failed");
  cudaError_t err = bias_gelu_launcher(y.data_ptr<float>(), bias.data_ptr<float>(), M, N,
                                       /*config=*/0, stream);
  TORCH_CHECK(err == cudaSuccess, "linear_gelu: launch failed: ", cudaGetErrorString(err));
  return y;
}

static void register_linear_gelu(pybind11::module& m) {
  m.def("linear_gelu_forward", &linear_gelu_forward, py::arg("x"), py::arg("weight"),
        py::arg("bias"));
}
REGISTER_BINDING(linear_gelu, register_linear_gelu);
