#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" cudaError_t row_sum_launcher(const float* x, float* y, int64_t rows, int64_t cols,
                                        cudaStream_t stream);

static torch::Tensor row_sum_forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
              "row_sum: x must be a contiguous 2-D float32 CUDA tensor");
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor y = torch::empty({x.size(0)}, x.options());
  cudaError_t err = row_sum_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1),
                                     c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "row_sum: launch failed: ", cudaGetErrorString(err));
  return y;
}

static void register_row_sum(pybind11::module& m) { m.def("row_sum_forward", &row_sum_forward, py::arg("x")); }
REGISTER_BINDING(row_sum, register_row_sum);
