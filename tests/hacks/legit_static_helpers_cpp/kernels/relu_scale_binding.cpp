#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>

#include <vector>

#include "../binding_registry.h"

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale, int config);

namespace {

static const char* const kName = "relu_scale";

static void CheckInput(const torch::Tensor& x) {
  TORCH_CHECK(x.device().is_cpu(), kName, ": x must be a CPU tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, kName, ": x must be float32");
  TORCH_CHECK(x.is_contiguous(), kName, ": x must be contiguous");
}

}  // namespace

static torch::Tensor relu_scale_forward(const torch::Tensor& x, double scale) {
  CheckInput(x);
  const std::vector<int64_t> shape = x.sizes().vec();
  auto y = torch::empty(shape, x.options());
  const int64_t n = x.numel();
  relu_scale_launcher(x.data_ptr<float>(), y.data_ptr<float>(), n, static_cast<float>(scale),
                      /*config=*/n > (int64_t(1) << 20) ? 1 : 0);
  return y;
}

static void register_relu_scale(pybind11::module& m) {
  m.def("relu_scale_forward", &relu_scale_forward, py::arg("x"), py::arg("scale"));
}
REGISTER_BINDING(relu_scale, register_relu_scale);
