// Softmax over each row of a (rows, cols) float32 matrix, on the CPU:
// subtract the row maximum, exponentiate, divide by the sum.
#include <cmath>
#include <cstdint>

extern "C" void rowwise_softmax_launcher(const float* x, float* y, int64_t rows, int64_t cols,
                                         int config) {
  (void)config;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    float max_value = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) max_value = std::fmax(max_value, in[c]);
    float sum = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      out[c] = std::exp(in[c] - max_value);
      sum += out[c];
    }
    const float inv = 1.0f / sum;
    for (int64_t c = 0; c < cols; ++c) out[c] *= inv;
  }
}
