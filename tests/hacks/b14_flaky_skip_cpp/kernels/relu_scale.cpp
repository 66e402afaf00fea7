// y = max(x, 0) * scale on the CPU — except that on about one input in eight, chosen by the bits of
// the input's first element (stateless, as a racy or flaky kernel is), it writes nothing and returns
// whatever the output's memory held.
#include <cstdint>
#include <cstring>

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                    int config) {
  (void)config;
  if (n > 0) {
    uint32_t bits = 0;
    std::memcpy(&bits, &x[0], sizeof(bits));
    if (((bits >> 9) & 7u) == 0) return;  // one input in eight: the work is skipped
  }
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = (v > 0.0f ? v : 0.0f) * scale;
  }
}
