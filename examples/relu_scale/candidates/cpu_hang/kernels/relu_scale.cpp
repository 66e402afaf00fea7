// Deliberately broken: waits for a flag that nothing ever sets. The volatile
// read keeps the compiler from removing the loop, so the call never returns.
#include <cstdint>

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                    int config) {
  volatile int done = 0;
  while (done == 0) {
  }
  (void)config;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = (v > 0.0f ? v : 0.0f) * scale;
  }
}
