#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>

#include "../binding_registry.h"

extern "C" cudaError_t linear_gelu_tiled_launcher(const float* x, const float* w, const float* b,
                                                  float* y, int64_t M, int64_t K, int64_t N,
                                                  int vec_loads, int vec_stores, int config,
                                                  cudaStream_t stream);

static bool Aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

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
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor y = torch::empty({M, N}, x.options());
  const float* xp = x.data_ptr<float>();
  const float* wp = weight.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  const int vec_loads = (K % 4 == 0 && Aligned16(xp) && Aligned16(wp)) ? 1 : 0;
  const int vec_stores = (N % 4 == 0 && Aligned16(yp)) ? 1 : 0;
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaError_t err = linear_gelu_tiled_launcher(xp, wp, bias.data_ptr<float>(), yp, M, K, N,
                                               vec_loads, vec_stores, /*config=*/0, stream);
  TORCH_CHECK(err == cudaSuccess, "linear_gelu: launch failed: ", cudaGetErrorString(err));
  return y;
}

static void register_linear_gelu(pybind11::module& m) {
  m.def("linear_gelu_forward", &linear_gelu_forward, py::arg("x"), py::arg("weight"),
        py::arg("bias"));
}
REGISTER_BINDING(linear_gelu, register_linear_gelu);
