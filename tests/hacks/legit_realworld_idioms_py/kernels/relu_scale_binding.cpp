#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include "../binding_registry.h"

extern "C" void relu_scale_bias_launcher(const float* x, const float* bias, int64_t nb, float* y,
                                         int64_t n, float scale);

// bias: an optional per-element bias; an empty tensor (torch.tensor([]) in model_new.py) means none.
static torch::Tensor relu_scale_bias_forward(torch::Tensor x, double scale, torch::Tensor bias) {
  TORCH_CHECK(x.device().is_cpu(), "relu_scale: x must be a CPU tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_scale: x must be float32");
  TORCH_CHECK(x.is_contiguous(), "relu_scale: x must be contiguous");
  TORCH_CHECK(bias.numel() == 0 || (bias.is_contiguous() && bias.scalar_type() == torch::kFloat32),
              "relu_scale: bias must be empty or contiguous float32");
  torch::Tensor y = torch::empty_like(x);
  const float* b = bias.numel() > 0 ? bias.data_ptr<float>() : nullptr;
  relu_scale_bias_launcher(x.data_ptr<float>(), b, bias.numel(), y.data_ptr<float>(), x.numel(),
                           static_cast<float>(scale));
  return y;
}

static void register_relu_scale(pybind11::module& m) {
  m.def("relu_scale_bias_forward", &relu_scale_bias_forward, py::arg("x"), py::arg("scale"),
        py::arg("bias"));
}
REGISTER_BINDING(relu_scale, register_relu_scale);
