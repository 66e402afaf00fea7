// Deliberately broken: besides the right output, one thread stores through a
// wild pointer about 1 TiB past the output buffer. The store hits unmapped
// device memory and the context fails with cudaErrorIllegalAddress
// ("an illegal memory access was encountered").
#include <cuda_runtime.h>

#include <cstdint>

__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y,
                                  int64_t n, float scale) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n; i += stride) {
    y[i] = fmaxf(x[i], 0.0f) * scale;
  }
  if (first == 0) {
    volatile float* wild = y + n + (int64_t(1) << 38);
    *wild = scale;
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
