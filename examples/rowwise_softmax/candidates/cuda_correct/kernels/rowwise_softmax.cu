// Softmax over each row of a (rows, cols) float32 matrix. One warp per row:
// a first pass keeps a running maximum and a running sum of exponentials
// (rescaled when the maximum grows), merged across lanes with shuffles; a
// second pass writes exp(x - max) / sum.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr unsigned kFullMask = 0xffffffffu;

// merge combines two (max, sum) pairs of the online softmax.
__device__ __forceinline__ void merge(float& max_value, float& sum, float other_max,
                                      float other_sum) {
  const float new_max = fmaxf(max_value, other_max);
  if (new_max == -INFINITY) return;  // both empty
  sum = sum * __expf(max_value - new_max) + other_sum * __expf(other_max - new_max);
  max_value = new_max;
}

__global__ void rowwise_softmax_kernel(const float* __restrict__ x, float* __restrict__ y,
                                       int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t)blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const float* in = x + row * cols;
  float* out = y + row * cols;

  float max_value = -INFINITY;
  float sum = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) {
    const float v = in[c];
    if (v > max_value) {
      sum = sum * __expf(max_value - v) + 1.0f;
      max_value = v;
    } else {
      sum += __expf(v - max_value);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other_max = __shfl_xor_sync(kFullMask, max_value, offset);
    const float other_sum = __shfl_xor_sync(kFullMask, sum, offset);
    merge(max_value, sum, other_max, other_sum);
  }
  const float inv = 1.0f / sum;
  for (int64_t c = lane; c < cols; c += 32) out[c] = __expf(in[c] - max_value) * inv;
}

}  // namespace

extern "C" cudaError_t rowwise_softmax_launcher(const float* x, float* y, int64_t rows,
                                                int64_t cols, int config, cudaStream_t stream) {
  (void)config;
  if (rows == 0 || cols == 0) return cudaSuccess;
  const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  rowwise_softmax_kernel<<<(unsigned)blocks, kWarpsPerBlock * 32, 0, stream>>>(x, y, rows, cols);
  return cudaGetLastError();
}
