// y = gelu_tanh(x), element-wise, on the CPU.
#include <cmath>
#include <cstdint>

extern "C" void gelu_launcher(const float* x, float* y, int64_t n, int config) {
  (void)config;
  const float kAlpha = 0.7978845608028654f;  // sqrt(2 / pi)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(kAlpha * (v + 0.044715f * v * v * v)));
  }
}
