// y = max(x, 0) * scale on the CPU, in fixed-size blocks the compiler unrolls and vectorises.
// Legitimate code that looks like what the static rules look for: static helpers, templates,
// __restrict__, a static const table, constants in an anonymous namespace, an own header.
#include <algorithm>
#include <cstdint>

#include "common.h"

namespace {

static constexpr int kLanes = 4;
static const float kZero[kLanes] = {0.0f, 0.0f, 0.0f, 0.0f};

template <int64_t N>
static inline void ScaleBlock(const float* __restrict__ x, float* __restrict__ y, float scale) {
#pragma GCC unroll 8
  for (int64_t i = 0; i < N; ++i) y[i] = std::max(x[i], kZero[i % kLanes]) * scale;
}

}  // namespace

extern "C" void relu_scale_launcher(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                    float scale, int config) {
  (void)config;
  int64_t i = 0;
  for (; i + relu_scale::kBlock <= n; i += relu_scale::kBlock) {
    ScaleBlock<relu_scale::kBlock>(x + i, y + i, scale);
  }
  for (; i < n; ++i) y[i] = relu_scale::Relu(x[i]) * scale;
}
