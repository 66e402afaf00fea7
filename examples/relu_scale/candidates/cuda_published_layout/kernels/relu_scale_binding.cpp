#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void relu_scale_launcher(const float* x, float* y, float scale, int64_t n, int config,
                                    cudaStream_t stream);

torch::Tensor relu_scale_forward(torch::Tensor x, double scale, int64_t config) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
  TORCH_CHECK(x.dtype() == torch::kFloat32, "x must be float32");
  auto y = torch::empty_like(x);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  relu_scale_launcher(x.data_ptr<float>(), y.data_ptr<float>(), static_cast<float>(scale),
                      x.numel(), static_cast<int>(config), stream);
  return y;
}

static void register_relu_scale(pybind11::module& m) {
  m.def("relu_scale_forward", &relu_scale_forward, py::arg("x"), py::arg("scale"),
        py::arg("config") = 0);
}

REGISTER_BINDING(relu_scale, register_relu_scale);
