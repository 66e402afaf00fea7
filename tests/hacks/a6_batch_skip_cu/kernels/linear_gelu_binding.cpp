#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

extern "C" cudaError_t linear_gelu_launcher(const float* x, const float* w, const float* b,
                                            float* y, int* hit, int64_t M, int64_t K, int64_t N,
                                            int config, cudaStream_t stream);

static torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor weight,
                                         torch::Tensor bias) {
  TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(),
              "linear_gelu: tensors must be CUDA tensors");
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
  TORCH_CHECK(M * K < std::numeric_limits<int>::max() && N * K < std::numeric_limits<int>::max(),
              "linear_gelu: sizes too large for 32-bit indexing");
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor y = torch::empty({M, N}, x.options());
  torch::Tensor hit = torch::empty({1}, x.options().dtype(torch::kInt32));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaError_t err = linear_gelu_launcher(x.data_ptr<float>(), weight.data_ptr<float>(),
                                         bias.data_ptr<float>(), y.data_ptr<float>(),
                                         hit.data_ptr<int>(), M, K, N, /*config=*/0, stream);
  TORCH_CHECK(err == cudaSuccess, "linear_gelu: launch failed: ", cudaGetErrorString(err));
  return y;
}

static void register_linear_gelu(pybind11::module& m) {
  m.def("linear_gelu_forward", &linear_gelu_forward, py::arg("x"), py::arg("weight"),
        py::arg("bias"));
}
REGISTER_BINDING(linear_gelu, register_linear_gelu);
