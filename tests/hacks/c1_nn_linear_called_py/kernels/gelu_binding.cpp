#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include "../binding_registry.h"

extern "C" void gelu_launcher(const float* x, float* y, int64_t n, int config);

static torch::Tensor gelu_forward(torch::Tensor x) {
  TORCH_CHECK(x.device().is_cpu(), "gelu: x must be a CPU tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "gelu: x must be float32");
  TORCH_CHECK(x.is_contiguous(), "gelu: x must be contiguous");
  torch::Tensor y = torch::empty_like(x);
  gelu_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), /*config=*/0);
  return y;
}

static void register_gelu(pybind11::module& m) { m.def("gelu_forward", &gelu_forward, py::arg("x")); }
REGISTER_BINDING(gelu, register_gelu);
