#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream);

static int MultiprocessorCount(int device) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return sms;
}

static torch::Tensor relu_scale_forward(const torch::Tensor& x, double scale) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "relu_scale: contiguous CUDA tensor expected");
  TORCH_CHECK(x.scalar_type() == at::kFloat, "relu_scale: float32 expected");
  const at::cuda::OptionalCUDAGuard guard(x.device());
  auto y = at::empty_like(x);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
  const cudaError_t err =
      relu_scale_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
                          static_cast<float>(scale), MultiprocessorCount(x.get_device()), stream);
  TORCH_CHECK(err == cudaSuccess, "relu_scale: ", cudaGetErrorString(err));
  return y;
}

static void register_relu_scale(pybind11::module& m) {
  m.def("relu_scale_forward", &relu_scale_forward, py::arg("x"), py::arg("scale"));
}
REGISTER_BINDING(relu_scale, register_relu_scale);
