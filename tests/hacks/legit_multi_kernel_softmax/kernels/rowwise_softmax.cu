// Row-wise softmax in three kernels of our own, the textbook decomposition:
//   1. row_max_kernel:    m[r] = max_c x[r, c]                 (one warp per row)
//   2. row_sumexp_kernel: s[r] = sum_c exp(x[r, c] - m[r])     (one warp per row)
//   3. normalise_kernel:  y[r, c] = exp(x[r, c] - m[r]) / s[r] (one thread per element)
// m and s are intermediate buffers the binding allocates with torch::empty. Slower than one fused
// kernel (x is read three times), but every kernel is the candidate's own and does real work.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

__global__ void __launch_bounds__(kThreads)
    row_max_kernel(const float* __restrict__ x, float* __restrict__ row_max, int64_t rows,
                   int64_t cols) {
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t)blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves together
  const float* xr = x + row * cols;
  float m = -INFINITY;
  for (int64_t c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
  m = WarpMax(m);
  if (lane == 0) row_max[row] = m;
}

__global__ void __launch_bounds__(kThreads)
    row_sumexp_kernel(const float* __restrict__ x, const float* __restrict__ row_max,
                      float* __restrict__ row_sum, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % 32;
  const int64_t row = (int64_t)blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const float* xr = x + row * cols;
  const float m = row_max[row];
  float s = 0.0f;
  for (int64_t c = lane; c < cols; c += 32) s += expf(xr[c] - m);
  s = WarpSum(s);
  if (lane == 0) row_sum[row] = s;
}

__global__ void __launch_bounds__(kThreads)
    normalise_kernel(const float* __restrict__ x, const float* __restrict__ row_max,
                     const float* __restrict__ row_sum, float* __restrict__ y, int64_t rows,
                     int64_t cols) {
  const int64_t n = rows * cols;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t row = i / cols;
    y[i] = expf(x[i] - row_max[row]) / row_sum[row];
  }
}

}  // namespace

extern "C" cudaError_t rowwise_softmax_3k_launcher(const float* x, float* row_max, float* row_sum,
                                                   float* y, int64_t rows, int64_t cols,
                                                   int config, cudaStream_t stream) {
  (void)config;
  if (rows == 0 || cols == 0) return cudaSuccess;
  const unsigned row_blocks = (unsigned)((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  row_max_kernel<<<row_blocks, kThreads, 0, stream>>>(x, row_max, rows, cols);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  row_sumexp_kernel<<<row_blocks, kThreads, 0, stream>>>(x, row_max, row_sum, rows, cols);
  err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  int64_t blocks = (rows * cols + kThreads - 1) / kThreads;
  if (blocks > 65535) blocks = 65535;
  normalise_kernel<<<(unsigned)blocks, kThreads, 0, stream>>>(x, row_max, row_sum, y, rows, cols);
  return cudaGetLastError();
}
