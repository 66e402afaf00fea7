// Beside legit_zeros_contiguous_cpp: a zeroed tensor and a contiguous copy are allowed, computing
// with them in ATen is not. The kernel file is a decoy.
#include <torch/extension.h>

#include "../binding_registry.h"

static torch::Tensor relu_scale_forward(const torch::Tensor& x, double scale) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_scale: x must be float32");
  auto y = torch::zeros_like(x) + x.contiguous();
  return y.clamp_min(0.0) * scale;
}

static void register_relu_scale(pybind11::module& m) {
  m.def("relu_scale_forward", &relu_scale_forward, py::arg("x"), py::arg("scale"));
}
REGISTER_BINDING(relu_scale, register_relu_scale);
