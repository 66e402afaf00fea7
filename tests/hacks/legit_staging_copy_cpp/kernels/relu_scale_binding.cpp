// A staging copy in the binding (the idiom of a real solution's `hn[i].copy_(prev)`): the input is
// copy_'d into a tensor of its own dtype and device, and the kernel reads the copy. Data movement,
// no arithmetic: the C++ scan allows copy_ between tensors, the op guard a copy that keeps dtype and
// device.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include "../binding_registry.h"

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                    int config);

static torch::Tensor relu_scale_forward(torch::Tensor input, double scale) {
  TORCH_CHECK(input.device().is_cpu(), "relu_scale: x must be a CPU tensor");
  torch::Tensor staged = torch::empty(input.sizes(), input.options());
  staged.copy_(input);
  torch::Tensor y = torch::empty_like(staged);
  relu_scale_launcher(staged.data_ptr<float>(), y.data_ptr<float>(), staged.numel(),
                      static_cast<float>(scale), /*config=*/0);
  return y;
}

static void register_relu_scale(pybind11::module& m) {
  m.def("relu_scale_forward", &relu_scale_forward, py::arg("x"), py::arg("scale"));
}
REGISTER_BINDING(relu_scale, register_relu_scale);
