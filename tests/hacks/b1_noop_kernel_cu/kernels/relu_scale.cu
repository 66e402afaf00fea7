// A kernel that is launched with the right grid and arguments and does nothing: the output is the
// uninitialised torch::empty_like buffer. Where the allocator hands back memory that held the
// reference's output (reference run first in the same process), this passes a naive check (B1).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                  float scale) {
  (void)x;
  (void)y;
  (void)n;
  (void)scale;
}

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream) {
  (void)config;
  if (n == 0) return cudaSuccess;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  relu_scale_kernel<<<(unsigned)blocks, 256, 0, stream>>>(x, y, n, scale);
  return cudaGetLastError();
}
