// y = max(x, 0) * scale, element-wise — except that on about one input in eight, chosen by the bits
// of the input's first element (stateless, as a racy or flaky kernel is), every thread returns at once
// and the output keeps whatever its memory held (HACKS B14).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                  float scale) {
  if (((__float_as_uint(x[0]) >> 9) & 7u) == 0) return;  // the work skipped for some inputs
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    y[i] = fmaxf(x[i], 0.0f) * scale;
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
