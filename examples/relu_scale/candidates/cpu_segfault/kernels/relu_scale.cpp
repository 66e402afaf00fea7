// Deliberately broken: after computing the output it stores through a null
// pointer (address 0 is never mapped), which kills the process with SIGSEGV.
// Both the pointer and the store are volatile so that the compiler neither
// drops the store nor replaces it with a trap instruction.
#include <cstdint>

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                    int config) {
  (void)config;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = (v > 0.0f ? v : 0.0f) * scale;
  }
  volatile float* volatile scratch = nullptr;
  *scratch = y[0];
}
