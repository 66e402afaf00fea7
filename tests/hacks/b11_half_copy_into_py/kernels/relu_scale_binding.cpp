#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include "../binding_registry.h"

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                    int config);

static torch::Tensor relu_scale_forward(torch::Tensor x, double scale) {
  TORCH_CHECK(x.device().is_cpu(), "relu_scale: x must be a CPU tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_scale: x must be float32");
  TORCH_CHECK(x.is_contiguous(), "relu_scale: x must be contiguous");
  torch::Tensor y = torch::empty_like(x);
  relu_scale_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
                      static_cast<float>(scale), /*config=*/0);
  return y;
}

static void register_relu_scale(pybind11::module& m) {
  m.def("relu_scale_forward", &relu_scale_forward, py::arg("x"), py::arg("scale"));
}
REGISTER_BINDING(relu_scale, register_relu_scale);
