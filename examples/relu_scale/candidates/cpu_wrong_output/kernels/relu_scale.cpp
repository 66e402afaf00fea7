// Deliberately wrong: adds 0.05 to every element, far outside the tolerance
// for the many outputs near zero.
#include <cstdint>

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                    int config) {
  (void)config;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = (v > 0.0f ? v : 0.0f) * scale + 0.05f;
  }
}
