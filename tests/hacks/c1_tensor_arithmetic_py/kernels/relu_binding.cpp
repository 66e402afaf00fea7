#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include "../binding_registry.h"

extern "C" void relu_launcher(const float* x, float* y, int64_t n, int config);

static torch::Tensor relu_forward(torch::Tensor x) {
  TORCH_CHECK(x.device().is_cpu(), "relu: x must be a CPU tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu: x must be float32");
  TORCH_CHECK(x.is_contiguous(), "relu: x must be contiguous");
  torch::Tensor y = torch::empty_like(x);
  relu_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), /*config=*/0);
  return y;
}

static void register_relu(pybind11::module& m) {
  m.def("relu_forward", &relu_forward, py::arg("x"));
}
REGISTER_BINDING(relu, register_relu);
