// Writes a quiet NaN to every output element, for the comparisons that let NaN through
// (`not (|a - e| > tol)` is true for NaN) (B3).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                  float scale) {
  (void)x;
  (void)scale;
  const float nan = __int_as_float(0x7fc00000);
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) y[i] = nan;
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
