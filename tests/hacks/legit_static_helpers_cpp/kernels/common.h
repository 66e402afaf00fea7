// Shared helpers of the relu_scale kernels.
#pragma once

#include <cstdint>

namespace relu_scale {

constexpr int64_t kBlock = 1024;

template <typename T>
static inline T Relu(T v) {
  return v > T(0) ? v : T(0);
}

}  // namespace relu_scale
