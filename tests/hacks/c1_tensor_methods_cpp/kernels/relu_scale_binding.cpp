#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include "../binding_registry.h"

static torch::Tensor relu_scale_forward(torch::Tensor x, double scale) {
  TORCH_CHECK(x.device().is_cpu(), "relu_scale: x must be a CPU tensor");
  return x.clamp_min(0.0).mul(scale);
}

static void register_relu_scale(pybind11::module& m) {
  m.def("relu_scale_forward", &relu_scale_forward, py::arg("x"), py::arg("scale"));
}
REGISTER_BINDING(relu_scale, register_relu_scale);
