#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>

#include "../binding_registry.h"

extern "C" void rowwise_softmax_launcher(const float* x, float* y, int64_t rows, int64_t cols,
                                         int config);

// The caller allocates the output; the kernel writes every element of it.
static void rowwise_softmax_out(const torch::Tensor& x, torch::Tensor& out) {
  TORCH_CHECK(x.device().is_cpu() && out.device().is_cpu(), "rowwise_softmax: CPU tensors only");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && out.scalar_type() == torch::kFloat32,
              "rowwise_softmax: float32 only");
  TORCH_CHECK(x.dim() == 2 && x.sizes() == out.sizes(), "rowwise_softmax: (rows, cols) in and out");
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "rowwise_softmax: contiguous tensors only");
  const auto rows = x.size(0);
  const auto cols = x.size(1);
  const int config = static_cast<int>(std::min<int64_t>(cols / 256, 3));
  rowwise_softmax_launcher(x.data_ptr<float>(), out.data_ptr<float>(), rows, cols, config);
}

static void register_rowwise_softmax(pybind11::module& m) {
  m.def("rowwise_softmax_out", &rowwise_softmax_out, py::arg("x"), py::arg("out"));
}
REGISTER_BINDING(rowwise_softmax, register_rowwise_softmax);
