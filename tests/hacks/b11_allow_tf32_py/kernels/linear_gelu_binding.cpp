#include <torch/extension.h>

#include "../binding_registry.h"

extern "C" void linear_gelu_launcher(const float* x, const float* w, const float* b, float* y,
                                     int64_t M, int64_t K, int64_t N, int config);

static torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor weight,
                                         torch::Tensor bias) {
  TORCH_CHECK(x.device().is_cpu() && weight.device().is_cpu() && bias.device().is_cpu(),
              "linear_gelu: tensors must be on the CPU");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
                  bias.scalar_type() == torch::kFloat32,
              "linear_gelu: tensors must be float32");
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1,
              "linear_gelu: expected x (M, K), weight (N, K), bias (N)");
  TORCH_CHECK(x.size(1) == weight.size(1) && weight.size(0) == bias.size(0),
              "linear_gelu: shapes do not match");
  TORCH_CHECK(x.is_contiguous() && weight.is_contiguous() && bias.is_contiguous(),
              "linear_gelu: tensors must be contiguous");
  const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
  torch::Tensor y = torch::empty({M, N}, x.options());
  linear_gelu_launcher(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                       y.data_ptr<float>(), M, K, N, /*config=*/0);
  return y;
}

static void register_linear_gelu(pybind11::module& m) {
  m.def("linear_gelu_forward", &linear_gelu_forward, py::arg("x"), py::arg("weight"),
        py::arg("bias"));
}
REGISTER_BINDING(linear_gelu, register_linear_gelu);
