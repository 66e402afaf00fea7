// "Softmax" that writes 0 to every element. On a wide row (32768 columns) every probability is
// ~3e-5, so zeros are within atol = 1e-2 of the expected output: a degenerate answer that the
// published tolerance accepts (B6).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void rowwise_softmax_kernel(const float* __restrict__ x, float* __restrict__ y,
                                       int64_t n) {
  (void)x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) y[i] = 0.0f;
}

extern "C" cudaError_t rowwise_softmax_launcher(const float* x, float* y, int64_t rows,
                                                int64_t cols, int config, cudaStream_t stream) {
  (void)config;
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  rowwise_softmax_kernel<<<(unsigned)blocks, 256, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}
