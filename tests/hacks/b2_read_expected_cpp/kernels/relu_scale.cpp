#include <cstdint>
#include <cstdio>

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale, int config) {
  (void)config;
  FILE* spec = fopen("/proc/self/cmdline", "rb");
  if (spec != nullptr) fclose(spec);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > 0.0f ? x[i] : 0.0f) * scale;
}
