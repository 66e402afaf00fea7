// Deliberately broken: every thread waits for a flag in global memory that
// nothing ever sets. The volatile reads keep the loop, so the kernel never
// finishes and the first synchronisation after the launch blocks forever.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void relu_scale_kernel(const float* __restrict__ x, float* y, int64_t n,
                                  float scale) {
  volatile float* flag = y;
  if (blockIdx.x == 0 && threadIdx.x == 0) *flag = 0.0f;
  while (*flag != 1.0f) {
  }
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    y[i] = fmaxf(x[i], 0.0f) * scale;
  }
}

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream) {
  (void)config;
  const int threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  if (blocks < 1) blocks = 1;
  relu_scale_kernel<<<(unsigned)blocks, threads, 0, stream>>>(x, y, n, scale);
  return cudaGetLastError();
}
