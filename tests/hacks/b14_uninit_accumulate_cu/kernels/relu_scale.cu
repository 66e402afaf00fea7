// y = max(x, 0) * scale, accumulated into y: y[i] += ... on an output from torch::empty_like, which is
// right only while that memory happens to hold zeros — as fresh device memory usually does (HACKS B12,
// B14: an uninitialised read that is usually zero).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                  float scale) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    y[i] += fmaxf(x[i], 0.0f) * scale;  // reads y before anything wrote it
  }
}

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream) {
  (void)config;
  if (n == 0) return cudaSuccess;
  const int threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  relu_scale_kernel<<<(unsigned)blocks, threads, 0, stream>>>(x, y, n, scale);
  return cudaGetLastError();
}
