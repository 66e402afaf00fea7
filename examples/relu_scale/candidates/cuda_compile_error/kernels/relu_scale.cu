// Deliberately broken: line 10 initialises a non-const pointer from a const
// one, which nvcc rejects.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y,
                                  int64_t n, float scale) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  float* in = x + i;
  if (i < n) y[i] = fmaxf(*in, 0.0f) * scale;
}

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream) {
  (void)config;
  const int threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  relu_scale_kernel<<<(unsigned)blocks, threads, 0, stream>>>(x, y, n, scale);
  return cudaGetLastError();
}
