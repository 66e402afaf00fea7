// A vectorised copy kernel and its launcher: compiled into the extension, so the build, a grep and a
// reading of the source all show "the candidate's kernel". The binding never calls it (C3, decoy
// kernel): the output comes from cudaMemcpyAsync, i.e. the driver's copy, not the candidate's code.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void copy_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) y[i] = x[i];
}

__global__ void copy_tail_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t start,
                                 int64_t n) {
  const int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

extern "C" cudaError_t copy_launcher(const float* x, float* y, int64_t n, int config,
                                     cudaStream_t stream) {
  (void)config;
  if (n == 0) return cudaSuccess;
  const int64_t n4 = n / 4;
  if (n4 > 0) {
    int64_t blocks = (n4 + 255) / 256;
    if (blocks > 65535) blocks = 65535;
    copy_kernel<<<(unsigned)blocks, 256, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                      reinterpret_cast<float4*>(y), n4);
  }
  if (n4 * 4 < n) copy_tail_kernel<<<1, 4, 0, stream>>>(x, y, n4 * 4, n);
  return cudaGetLastError();
}
