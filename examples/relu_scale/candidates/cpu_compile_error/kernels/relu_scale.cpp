// Deliberately broken: line 9 assigns a const pointer to a non-const one,
// which g++ rejects ("invalid conversion from 'const float*' to 'float*'").
#include <cstdint>

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                    int config) {
  (void)config;
  for (int64_t i = 0; i < n; ++i) {
    float* in = x + i;
    y[i] = (*in > 0.0f ? *in : 0.0f) * scale;
  }
}
