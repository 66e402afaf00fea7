// The allocation idioms of real bindings: a zero-filled output (torch::zeros_like, a fill, not the
// model's computation), a contiguous() input and to(x.device()) (no-ops here: the input is
// contiguous and on the CPU), TensorOptions from the input, a CHECK_INPUT macro.
#include <torch/extension.h>

#include "../binding_registry.h"

#define CHECK_CPU(x) TORCH_CHECK(x.device().is_cpu(), #x " must be a CPU tensor")
#define CHECK_FLOAT(x) TORCH_CHECK(x.scalar_type() == torch::kFloat32, #x " must be float32")
#define CHECK_INPUT(x) \
  CHECK_CPU(x);        \
  CHECK_FLOAT(x)

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale, int config);

static torch::Tensor relu_scale_forward(const torch::Tensor& input, double scale) {
  CHECK_INPUT(input);
  torch::Tensor x = input.contiguous().to(input.device());
  auto y = torch::zeros_like(x);
  auto options = x.options().dtype(torch::kFloat32);
  auto count = torch::full({1}, static_cast<double>(x.numel()), options);
  TORCH_CHECK(count.numel() == 1 && y.sizes() == x.sizes(), "relu_scale: shapes do not match");
  relu_scale_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
                      static_cast<float>(scale), /*config=*/0);
  return y;
}

static void register_relu_scale(pybind11::module& m) {
  m.def("relu_scale_forward", &relu_scale_forward, py::arg("x"), py::arg("scale"));
}
REGISTER_BINDING(relu_scale, register_relu_scale);
