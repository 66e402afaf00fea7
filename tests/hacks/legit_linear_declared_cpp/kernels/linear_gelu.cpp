// y = gelu_tanh(x @ w^T + b) on the CPU.
// x: (M, K), w: (N, K), b: (N), y: (M, N), all float32, row-major.
// w is transposed into a scratch buffer so that the innermost loop runs over
// contiguous output columns (which the compiler vectorises); the output is
// computed in blocks of kRows x kCols accumulators that stay in cache.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

constexpr int64_t kRows = 8;
constexpr int64_t kCols = 256;

inline float gelu_tanh(float v) {
  const float kAlpha = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * v * (1.0f + std::tanh(kAlpha * (v + 0.044715f * v * v * v)));
}

}  // namespace

extern "C" void linear_gelu_launcher(const float* x, const float* w, const float* b, float* y,
                                     int64_t M, int64_t K, int64_t N, int config) {
  (void)config;
  std::vector<float> wt(static_cast<size_t>(K * N));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) wt[k * N + n] = w[n * K + k];
  }
  float acc[kRows][kCols];
  for (int64_t m0 = 0; m0 < M; m0 += kRows) {
    const int64_t rows = std::min(kRows, M - m0);
    for (int64_t n0 = 0; n0 < N; n0 += kCols) {
      const int64_t cols = std::min(kCols, N - n0);
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) acc[i][j] = b[n0 + j];
      }
      for (int64_t k = 0; k < K; ++k) {
        const float* wrow = wt.data() + k * N + n0;
        for (int64_t i = 0; i < rows; ++i) {
          const float xv = x[(m0 + i) * K + k];
          float* arow = acc[i];
          for (int64_t j = 0; j < cols; ++j) arow[j] += xv * wrow[j];
        }
      }
      for (int64_t i = 0; i < rows; ++i) {
        float* yrow = y + (m0 + i) * N + n0;
        for (int64_t j = 0; j < cols; ++j) yrow[j] = gelu_tanh(acc[i][j]);
      }
    }
  }
}
