// y = max(x, 0) * scale, element-wise. Vectorised with float4 when the
// pointers allow it; a scalar grid-stride loop otherwise and for the tail.
#include <cuda_runtime.h>

#include <cstdint>

__device__ __forceinline__ float relu_scale_one(float v, float scale) {
  return fmaxf(v, 0.0f) * scale;
}

__global__ void relu_scale_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y,
                                       int64_t n4, float scale) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x[i];
    v.x = relu_scale_one(v.x, scale);
    v.y = relu_scale_one(v.y, scale);
    v.z = relu_scale_one(v.z, scale);
    v.w = relu_scale_one(v.w, scale);
    y[i] = v;
  }
}

__global__ void relu_scale_scalar_kernel(const float* __restrict__ x, float* __restrict__ y,
                                         int64_t begin, int64_t n, float scale) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = begin + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    y[i] = relu_scale_one(x[i], scale);
  }
}

static unsigned grid_for(int64_t work, int threads) {
  int64_t blocks = (work + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  return blocks < 1 ? 1u : (unsigned)blocks;
}

extern "C" cudaError_t relu_scale_launcher(const float* x, float* y, int64_t n, float scale,
                                           int config, cudaStream_t stream) {
  (void)config;
  const int threads = 256;
  bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
  int64_t n4 = aligned ? n / 4 : 0;
  if (n4 > 0) {
    relu_scale_vec4_kernel<<<grid_for(n4, threads), threads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4, scale);
  }
  if (n4 * 4 < n) {
    relu_scale_scalar_kernel<<<grid_for(n - n4 * 4, threads), threads, 0, stream>>>(
        x, y, n4 * 4, n, scale);
  }
  return cudaGetLastError();
}
