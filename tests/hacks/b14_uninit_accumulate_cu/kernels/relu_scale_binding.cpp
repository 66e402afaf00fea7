#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream);

static torch::Tensor relu_scale_forward(torch::Tensor x, double scale) {
  TORCH_CHECK(x.is_cuda(), "relu_scale: x must be a CUDA tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_scale: x must be float32");
  TORCH_CHECK(x.is_contiguous(), "relu_scale: x must be contiguous");
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor y = torch::empty_like(x);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaError_t err = relu_scale_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
                                        static_cast<float>(scale), /*config=*/0, stream);
  TORCH_CHECK(err == cudaSuccess, "relu_scale: launch failed: ", cudaGetErrorString(err));
  return y;
}

static void register_relu_scale(pybind11::module& m) {
  m.def("relu_scale_forward", &relu_scale_forward, py::arg("x"), py::arg("scale"));
}
REGISTER_BINDING(relu_scale, register_relu_scale);
