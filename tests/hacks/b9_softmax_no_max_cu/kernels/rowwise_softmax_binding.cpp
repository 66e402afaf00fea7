#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" cudaError_t rowwise_softmax_launcher(const float* x, float* y, int64_t rows,
                                                int64_t cols, int config, cudaStream_t stream);

static torch::Tensor rowwise_softmax_forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "rowwise_softmax: x must be a CUDA tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "rowwise_softmax: x must be float32");
  TORCH_CHECK(x.dim() == 2, "rowwise_softmax: x must be 2-D");
  TORCH_CHECK(x.is_contiguous(), "rowwise_softmax: x must be contiguous");
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor y = torch::empty_like(x);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaError_t err = rowwise_softmax_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0),
                                             x.size(1), /*config=*/0, stream);
  TORCH_CHECK(err == cudaSuccess, "rowwise_softmax: launch failed: ", cudaGetErrorString(err));
  return y;
}

static void register_rowwise_softmax(pybind11::module& m) {
  m.def("rowwise_softmax_forward", &rowwise_softmax_forward, py::arg("x"));
}
REGISTER_BINDING(rowwise_softmax, register_rowwise_softmax);
