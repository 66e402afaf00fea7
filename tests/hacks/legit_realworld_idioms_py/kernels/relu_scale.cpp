// y = max(x, 0) * scale (+ bias[i % nb] when a bias is given), element-wise, on the CPU.
#include <cstdint>

extern "C" void relu_scale_bias_launcher(const float* x, const float* bias, int64_t nb, float* y,
                                         int64_t n, float scale) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = (v > 0.0f ? v : 0.0f) * scale + (nb > 0 ? bias[i % nb] : 0.0f);
  }
}
