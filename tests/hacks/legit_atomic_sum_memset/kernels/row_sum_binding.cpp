#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" cudaError_t row_sum_atomic_launcher(const float* x, float* y, int64_t rows,
                                               int64_t cols, int config, cudaStream_t stream);

static torch::Tensor row_sum_forward(const torch::Tensor& x, int64_t dim) {
  TORCH_CHECK(x.is_cuda(), "row_sum: x must be a CUDA tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "row_sum: x must be float32");
  TORCH_CHECK(x.dim() == 2, "row_sum: x must be 2-D");
  TORCH_CHECK(dim == 1 || dim == -1, "row_sum: only the last dimension is supported, got ", dim);
  TORCH_CHECK(x.is_contiguous(), "row_sum: x must be contiguous");
  const c10::cuda::CUDAGuard guard(x.device());
  // Uninitialised here; the launcher zeroes it with cudaMemsetAsync before the atomics.
  torch::Tensor y = torch::empty({x.size(0)}, x.options());
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  cudaError_t err = row_sum_atomic_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0),
                                            x.size(1), /*config=*/0, stream);
  TORCH_CHECK(err == cudaSuccess, "row_sum: ", cudaGetErrorString(err));
  return y;
}

static void register_row_sum(pybind11::module& m) {
  m.def("row_sum_forward", &row_sum_forward, py::arg("x"), py::arg("dim"));
}
REGISTER_BINDING(row_sum, register_row_sum);
